#!/usr/bin/env bash
# The ARM64 build under qemu-user (make arm64-test cross-builds it into
# bin-arm64/ and build-arm64-openblas/ first, and bin/ for x86-64): the
# cmocka unit tests at each ARM64 level, then a short CLI suite: prepare,
# train, eval, sample, resume equal to the uninterrupted run byte for byte,
# the ARM64 build's refusals (bf16 without oneDNN, an mpirun job without
# MPI), and a short training's losses and its checkpoint's eval loss against
# the x86-64 build's, within tolerance (their sums are in other orders).
# One OpenMP thread (OMP_THREAD_LIMIT=1, which also caps the tests that ask
# for two): under Debian 12's qemu-user 7.2 a libgomp parallel region of two
# threads never finishes, even a ten-line program's (an emulation limit), so
# the thread-invariance tests pass trivially here; they run natively on x86-64.
set -u
export OMP_THREAD_LIMIT=1 OMP_NUM_THREADS=1
cd "$(dirname "$0")/../.."
ARM_OUT=${ARM_OUT:-build-arm64-openblas}
ARM_BIN=${ARM_BIN:-bin-arm64}
X86_BIN=${BIN:-bin}
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}
QEMU=${QEMU:-qemu-aarch64}
command -v "$QEMU" >/dev/null || { echo "arm64_test: no $QEMU (bash scripts/install-deps-arm64.sh)"; exit 1; }
started=$SECONDS

# ---- the generated code: the NEON kernels as their comments say ------------------
# The tile kernel's 5 x 4 block: a loop of 20 fmla, and no innermost loop
# that moves a vector register to or from the stack (no spills); the
# attention tiles' online softmax (nn/vec_loops_kernel.h at the neon level:
# vec_loops.neon.o): fast_expf vectorised (frintm on 4 lanes: the
# floor of its range reduction).
OBJDUMP=${OBJDUMP:-aarch64-linux-gnu-objdump}
python3 - "$OBJDUMP" "$ARM_OUT" <<'PY' || { echo "arm64_test: the NEON code is not as expected"; exit 1; }
import re, subprocess, sys
objdump, out = sys.argv[1:]
def disassemble(obj):
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", f"{out}/{obj}"], capture_output=True, text=True, check=True).stdout
    return [(int(m[0], 16), m[1], m[2]) for m in re.findall(r"^[ \t]+([0-9a-f]+):[ \t]+(\S+)[ \t]*(.*)$", text, re.M)]
code = disassemble("src/blas/tile_gemm.neon.o")
index = {a: i for i, (a, _, _) in enumerate(code)}
def back_branch(a, op, args):  # the loop's first instruction, or None
    target = re.match(r"([0-9a-f]+) <", args.split(",")[-1].strip())
    if (op.startswith("b.") or op in ("b", "cbnz", "cbz")) and target and int(target[1], 16) < a:
        return int(target[1], 16)
loops = []  # the innermost loops' fmla counts and whether they touch the stack
for i, (a, op, args) in enumerate(code):
    start = back_branch(a, op, args)
    if start is not None and start in index:
        body = code[index[start]:i + 1]
        if not any(back_branch(*x) is not None for x in body[:-1]):
            loops.append((sum(o == "fmla" for _, o, _ in body),
                          any(re.match(r"[qdsv]\d", g) and "[sp" in g for _, _, g in body)))  # a vector spilled
blocks = [l for l in loops if l[0] >= 8]
spills = [f for f, stack in blocks if stack]
print(f"arm64_test: tile_gemm_neon: innermost loops of 8+ fmla {sorted(f for f, _ in blocks)}, spilling vectors {spills}")
exp = sum(o == "frintm" and ".4s" in g for _, o, g in disassemble("src/nn/vec_loops.neon.o"))
print(f"arm64_test: softmax loops: {exp} vector floors (fast_expf)")
sys.exit(0 if any(f == 20 for f, _ in blocks) and not spills and exp >= 1 else 1)
PY

# ---- unit tests, at each level the ARM64 build lists ------------------------------
levels=$("$QEMU" "$ARM_BIN/gemm-rate" --isa-levels) || { echo "arm64_test: gemm-rate --isa-levels failed"; exit 1; }
[ "$(echo $levels)" = "portable neon" ] || { echo "arm64_test: ARM64 levels are '$(echo $levels)', wanted 'portable neon'"; exit 1; }
# At neon every test but test_threads (thread counts: it needs two threads,
# and minutes of emulated training per width); at portable the one the level
# changes, the tile kernel against its reference at every block shape
# (test_grad there would add ~150 s; x86-64 runs it at portable natively).
# One qemu per core at a time (ARM64_JOBS), the longest first: within the
# CI's ten minutes, with the build. test_grad alone is most of it (about
# 380 s under qemu), so it runs as three parts of about equal time side by
# side (LM_TEST_ONLY and LM_TEST_SKIP, tests/unit/testutil.h): its windowed
# attention, its attention tiles, and every other test (the complement of
# the first two's patterns, so a test added to it runs in "rest").
grad_window=test_attention_window grad_tiles='test_attention_*tiles'
run_unit() {  # ISA TEST[/PART]: its log and exit status in $ARM_OUT/TEST[.PART].ISA.{log,rc}
    local isa=$1 test=${2%%/*} part= s=$SECONDS filter=()
    [ "$2" = "$test" ] || part=${2#*/}
    case $part in
        window) filter=("LM_TEST_ONLY=$grad_window") ;;
        tiles) filter=("LM_TEST_ONLY=$grad_tiles") ;;
        rest) filter=("LM_TEST_SKIP=$grad_window,$grad_tiles") ;;
    esac
    local t=$ARM_OUT/$test tag=$test${part:+.$part}
    env "${filter[@]}" LM_MAX_ISA="$isa" "$QEMU" "$t" >"$ARM_OUT/$tag.$isa.log" 2>&1
    echo $? >"$ARM_OUT/$tag.$isa.rc"
    echo "== $t${part:+ ($part)} (qemu-aarch64, LM_MAX_ISA=$isa): $(grep -E '^\[  (PASSED|FAILED)' "$ARM_OUT/$tag.$isa.log" | tr -s ' ' | tr '\n' ' ')($((SECONDS - s)) s)"
}
units="neon:test_grad/window neon:test_grad/tiles neon:test_grad/rest neon:test_units neon:test_inspect"
units="$units neon:test_tile_gemm portable:test_tile_gemm"
for t in "$ARM_OUT"/test_*; do
    name=$(basename "$t")
    case $name in *.log|*.rc|test_threads|test_units|test_inspect|test_tile_gemm|test_grad) ;; *) units="$units neon:$name" ;; esac
done
rm -f "$ARM_OUT"/test_*.rc "$ARM_OUT"/test_*.log
# The cores this process may use: nproc reads OMP_THREAD_LIMIT (set to 1
# above) as a cap on what it prints, so it is asked without it.
jobs_at_once=${ARM64_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}
for job in $units; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n; done
    run_unit "${job%%:*}" "${job#*:}" &
done
wait
for job in $units; do
    isa=${job%%:*} name=${job#*:}
    tag=${name/\//.}
    if [ "$(cat "$ARM_OUT/$tag.$isa.rc" 2>/dev/null)" != 0 ]; then
        cat "$ARM_OUT/$tag.$isa.log"
        echo "arm64_test: $ARM_OUT/$name failed at $isa"
        exit 1
    fi
done
echo "arm64_test: unit tests in $((SECONDS - started)) s"

# ---- the programs: every command runs bin-arm64's program under qemu -------------
BIN=$ARM_BIN
source tests/cli/cli_lib.sh
export OMP_NUM_THREADS=1
mkdir -p "$tmp/arm"
for p in prepare train eval sample gemm-rate; do
    printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "$PWD/$ARM_BIN/$p" >"$tmp/arm/$p"
    chmod +x "$tmp/arm/$p"
done
B=$tmp/arm
small_corpora
RUN=(--data "$tmp/a" "${SMALL[@]}" --max-iters 12 --eval-interval 6 --seed 5)
expect_ok "train" $B/train "${RUN[@]}" --out "$tmp/full.ckpt" --log "$tmp/full.csv"
grep -q "isa neon" "$tmp/out" && ok || bad "the start-up line does not name the neon level: $(grep -m1 'isa' "$tmp/out")"
expect_ok "train to step 5" $B/train "${RUN[@]}" --out "$tmp/half.ckpt" --log "$tmp/half.csv" --stop-at 5
expect_ok "resume" $B/train --data "$tmp/a" --out "$tmp/half.ckpt" --resume "$tmp/half.ckpt" --log "$tmp/half.csv"
cmp -s "$tmp/full.ckpt" "$tmp/half.ckpt" && ok || bad "the resumed run's checkpoint differs from the uninterrupted one's"
expect_ok "eval" $B/eval --model "$tmp/full.ckpt" --data "$tmp/a/val.bin" --stride 8
expect_ok "sample" $B/sample --model "$tmp/full.ckpt" --prompt "The whale" --tokens 20 --seed 3
[ "$(head -c 9 "$tmp/out")" = "The whale" ] && ok || bad "sample did not echo its prompt"
expect_ok "train grassmann, portable level" env LM_MAX_ISA=portable $B/train --data "$tmp/a" "${SMALL[@]}" --max-iters 4 \
    --mixer grassmann --grassmann-windows 1,2 --out "$tmp/gr.ckpt"
grep -q "isa portable (LM_MAX_ISA; this CPU has neon)" "$tmp/out" && ok || bad "LM_MAX_ISA=portable is not on the start-up line"
expect_error "LM_MAX_ISA=avx2 on ARM64" "LM_MAX_ISA=avx2: this CPU does not run it \\(its best level is neon\\)" \
    env LM_MAX_ISA=avx2 $B/train "${RUN[@]}" --out "$tmp/x.ckpt"
expect_error "bf16 without oneDNN" "^train: error: --precision bf16 needs oneDNN, which this build lacks" \
    $B/train "${RUN[@]}" --out "$tmp/x.ckpt" --precision bf16
# (bin/train exits 1 when it cannot join a job, as when MPI_Init fails)
env OMPI_COMM_WORLD_SIZE=2 $B/train "${RUN[@]}" --out "$tmp/x.ckpt" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "one of 2 ranks, but this build has no MPI" "$tmp/err" && ok \
    || bad "an mpirun job without MPI: $(head -c 300 "$tmp/err")"
[ ! -e "$tmp/x.ckpt" ] && ok || bad "a refused run wrote a checkpoint"

# ---- against x86-64: the same run's losses, and the ARM64 checkpoint evaluated by both
if [ -x "$X86_BIN/train" ]; then
    "$X86_BIN/train" "${RUN[@]}" --out "$tmp/x86.ckpt" --log "$tmp/x86.csv" >/dev/null 2>&1 || bad "x86-64 train failed"
    # the train and val losses and gradient norms of each logged step within 1e-3
    # relative (fp32 summed in other orders by other kernels)
    python3 - "$tmp/full.csv" "$tmp/x86.csv" <<'PY' && ok || bad "ARM64 and x86-64 losses differ beyond 1e-3"
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:])
assert len(a) == len(b) and len(a) > 0, (len(a), len(b))
worst = 0.0
for ra, rb in zip(a, b):
    for key in ("train_loss", "val_loss", "grad_norm"):
        if ra.get(key) and rb.get(key):
            x, y = float(ra[key]), float(rb[key])
            worst = max(worst, abs(x - y) / max(abs(y), 1e-6))
print(f"arm64_test: ARM64 vs x86-64 losses and gradient norms over {len(a)} rows: worst relative difference {worst:.2e}")
sys.exit(0 if worst <= 1e-3 else 1)
PY
    la=$($B/eval --model "$tmp/full.ckpt" --data "$tmp/a/val.bin" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
    lx=$("$X86_BIN/eval" --model "$tmp/full.ckpt" --data "$tmp/a/val.bin" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
    python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'arm64_test: the ARM64 checkpoint evaluated on ARM64 {a:.6f}, on x86-64 {b:.6f}'); sys.exit(abs(a-b)>1e-4*abs(b))" "$la" "$lx" \
        && ok || bad "the ARM64 checkpoint's eval loss differs between ARM64 ($la) and x86-64 ($lx)"
else
    bad "no x86-64 build in $X86_BIN to compare with (make arm64-test builds it)"
fi
echo "arm64_test: $pass passed, $fail failed ($((SECONDS - started)) s)"
[ "$fail" -eq 0 ]
