#!/usr/bin/env bash
# make valgrind: the unit tests and a short train, eval, sample and info under
# valgrind memcheck (bin-vg, build-vg: an AVX2 build), each with zero errors
# and no definitely lost bytes. OpenMP's thread pool stays alive until exit,
# so "possibly lost" blocks of its threads are not counted.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=2
# BLIS's AVX2 kernels, pinned: valgrind knows AVX2 but not AVX-512, and a
# program that selected its kernels restarts itself with exec, which valgrind
# does not follow (the rest of the run would escape memcheck).
export BLIS_ARCH_TYPE=haswell
pass=0
fail=0
VG=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite)
vg() {
    local name=$1
    shift
    local t0=$SECONDS
    "${VG[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "ok   $name ($((SECONDS - t0)) s)"
    else fail=$((fail + 1)); echo "FAIL $name: exit $rc"; grep -E "^==[0-9]+==|error" "$tmp/err" | head -30; fi
}
# Unit tests: test_units, test_blas, test_tile_gemm, test_inspect and test_mixers took 14, 4,
# 0.4, 0.1 and 8 (1.5 CPU-minutes, at load 9) minutes here under valgrind (a shared 2-core
# machine), so --quick (CI) runs only the programs. test_grad and test_threads (finite differences over
# whole models, many training steps) would take far longer; the same code runs
# under AddressSanitizer in make asan.
if [ "${1:-}" != --quick ]; then
    for t in build-vg/test_units build-vg/test_blas build-vg/test_tile_gemm build-vg/test_inspect build-vg/test_mixers; do
        vg "$(basename "$t")" "$t"
    done
fi
for i in $(seq 1 40); do echo "Call me Ishmael, line $i of a small corpus."; done >"$tmp/a.txt"
vg prepare bin-vg/prepare --input "$tmp/a.txt" --out "$tmp/d"
for mixer in attention grassmann; do
    vg "train $mixer" bin-vg/train --data "$tmp/d" --out "$tmp/$mixer.ckpt" --mixer "$mixer" --n-layer 2 --n-head 2 \
        --n-embd 16 --block-size 16 --batch-size 4 --max-iters 4 --eval-iters 2 --grad-accum 2 --dropout 0.1 \
        --grassmann-rank 4 --grassmann-windows 1,2,4
    vg "resume $mixer" bin-vg/train --data "$tmp/d" --out "$tmp/$mixer.ckpt" --resume "$tmp/$mixer.ckpt" --max-iters 6
    vg "eval $mixer" bin-vg/eval --model "$tmp/$mixer.ckpt" --data "$tmp/d"
    vg "sample $mixer" bin-vg/sample --model "$tmp/$mixer.ckpt" --tokens 40
    vg "info $mixer" bin-vg/info "$tmp/$mixer.ckpt" --json
done
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
