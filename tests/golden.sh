#!/usr/bin/env bash
# Two builds' programs, byte for byte: every program run with the same
# arguments from each of two bin/ folders, and every file and stdout they
# write compared (timings and paths masked). For changes that must not change
# behaviour (a refactor, a move): build the old tree's bin/ beside the new one,
# then
#   bash tests/golden.sh OLD_BIN NEW_BIN [DEMO_ITERS]
# The demo's configuration trains DEMO_ITERS steps (default 200) on data/moby
# (make data). Prints one line per difference and "golden: N passed, M failed".
set -uo pipefail
old=${1:?usage: tests/golden.sh OLD_BIN NEW_BIN [DEMO_ITERS]}
new=${2:?usage: tests/golden.sh OLD_BIN NEW_BIN [DEMO_ITERS]}
iters=${3:-200}
[ -s data/moby/train.bin ] || { echo "golden: data/moby is missing (make data)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export OMP_NUM_THREADS=2 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # mpirun as root, as in CI

# ok COMMAND...: runs it; a failure is noted in OUT/failed, so a script that
# no longer runs cannot pass as two equal failures.
ok() { "$@" || echo "exit $?: $*" >>"$o/failed"; }

# run_all BIN OUT: the script, its outputs under OUT.
run_all() {
    local B=$1 o=$2
    mkdir -p "$o"
    for i in $(seq 1 80); do echo "The whale, the whale! Line $i: caf$(printf '\xc3\xa9'), $((i * 37)) knots."; done >"$o/a.txt"
    {
        ok $B/prepare --input "$o/a.txt" --out "$o/char"
        ok $B/prepare --input "$o/a.txt" --out "$o/bpe" --tokenizer bpe --vocab-size 300
        ok $B/prepare --input "$o/a.txt" --out "$o/byte" --tokenizer byte
        ok $B/probegen --task mqar --out "$o/mqar" --seq-len 32 --pairs 4 --symbols 16
        local gw=(--grassmann-windows 1,2,4 --grassmann-rank 6)
        local small=(--n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 2 --log-interval 5 --max-iters 12 --eval-interval 6)
        ok $B/train --data "$o/char" --out "$o/att.ckpt" "${small[@]}" --log "$o/att.csv"
        ok $B/train --data "$o/char" --out "$o/att.ckpt" "${small[@]}" --resume "$o/att.ckpt" --max-iters 18
        ok $B/train --data "$o/bpe" --out "$o/gr.ckpt" "${small[@]}" --mixer grassmann --norm post "${gw[@]}"
        ok $B/train --data "$o/byte" --out "$o/hy.ckpt" "${small[@]}" --mixer attention,grassmann --pos rope --grad-accum 2 --dropout 0.1 "${gw[@]}"
        ok $B/train --data "$o/char" --out "$o/sin.ckpt" "${small[@]}" --pos sinusoidal --dump-grads "$o/grads.safetensors"
        ok $B/train --data "$o/mqar" --out "$o/mqar.ckpt" "${small[@]}" --block-size 32 --window-align 33 --json
        for m in att gr hy; do
            d=char; [ $m = gr ] && d=bpe; [ $m = hy ] && d=byte
            ok $B/eval --model "$o/$m.ckpt" --data "$o/$d" --json --by-position --split-recall 2
            ok $B/sample --model "$o/$m.ckpt" --prompt "The whale" --tokens 40 --seed 3 --temperature 0.8 --top-k 5
            ok $B/inspect --model "$o/$m.ckpt" --prompt "The whale, the" --out "$o/inspect_$m"
        done
        ok mpirun --oversubscribe -np 2 $B/train --data "$o/char" --out "$o/mpi.ckpt" "${small[@]}" --mixer grassmann,attention "${gw[@]}" >/dev/null
        ok mpirun --oversubscribe -np 2 $B/train --data "$o/char" --out "$o/mpi2.ckpt" "${small[@]}" --grad-accum 4 --norm post >/dev/null
        ok $B/train --data "$o/char" --out "$o/prof.ckpt" "${small[@]}" --profile --mixer attention,grassmann --dropout 0.1 "${gw[@]}" >/dev/null
        ok $B/train --data "$o/char" --out "$o/pr.ckpt" "${small[@]}" --mixer attention --norm post --pos rope --grad-accum 3 --dropout 0.2
        ok $B/train --data "$o/char" --out "$o/pr.ckpt" "${small[@]}" --mixer attention --norm post --pos rope --grad-accum 3 --dropout 0.2 --resume "$o/pr.ckpt" --max-iters 16
        ok $B/train --data "$o/char" --out "$o/gpost.ckpt" "${small[@]}" --mixer grassmann,attention --norm post "${gw[@]}" --dump-grads "$o/grads_post.safetensors"
        ok $B/train --data "$o/char" --out "$o/gpre.ckpt" "${small[@]}" --mixer grassmann,attention --pos rope --grassmann-windows "1,2;4" --dump-grads "$o/grads_pre.safetensors"
        for m in pr mpi2; do
            ok $B/eval --model "$o/$m.ckpt" --data "$o/char" --json
            ok $B/sample --model "$o/$m.ckpt" --prompt "The whale" --tokens 40 --seed 3
            ok $B/inspect --model "$o/$m.ckpt" --prompt "The whale, the" --out "$o/inspect_$m"
        done
        $B/convert --to-hf "$o/att.ckpt" --out "$o/hf" 2>&1 || true  # a char model: refused, the same line from both
        ok $B/train --data data/moby --out "$o/demo.ckpt" --n-layer 4 --n-head 4 --n-embd 128 --block-size 64 \
            --batch-size 12 --max-iters "$iters" --lr 1e-3 --min-lr 1e-4 --warmup-iters 100 --log-interval 50 --eval-interval 100
        ok $B/eval --model "$o/demo.ckpt" --data data/moby --split val
        ok $B/eval --model "$o/demo.ckpt" --data data/moby --split test
        ok $B/sample --model "$o/demo.ckpt" --prompt "Call me Ishmael. " --tokens 200 --temperature 0.8 --seed 7
        for p in prepare train eval sample inspect probegen convert gemm-rate; do $B/$p --help; done
    } >"$o/stdout" 2>"$o/stderr"
}
# Each side in the same folder, then moved aside: a checkpoint keeps its data's
# absolute path, and a checksum over it.
run_all "$old" "$work/run"; mv "$work/run" "$work/old"
run_all "$new" "$work/run"; mv "$work/run" "$work/new"
# Timings, rates and the folder differ between runs, not behaviour.
mask() {
    case "$1" in *.csv) cut -d, -f1-7 "$1"; return ;; esac  # ms_per_step, elapsed_s and the tuner's threads vary
    sed -E "s#$work/(old|new)#W#g; s#(old|new)/#X/#g; s/([0-9]+m ?)?[0-9.]+ ?(ms|s|tok\/s|tokens\/s|k tok\/s|GFLOP\/s|%)\b/T\2/g; s/(eta|elapsed|took)[^|]*//g; s/\"(seconds|ms_per_step|tokens_per_second|tok_per_s|wall_s|profile)\"[^,}]*//g; s/ \| [0-9]+ of [0-9]+ threads//; s/ \(fewer while that is faster[^)]*\)//; s/ +/ /g" "$1"
}
pass=0 fail=0
for side in old new; do
    [ -s "$work/$side/failed" ] && { sed "s/^/FAIL: golden: $side: /" "$work/$side/failed"; fail=$((fail + 1)); }
done
for f in $(cd "$work/old" && find . -type f | sort); do
    case "$f" in *.lock) continue ;; esac  # bin/train's lock beside --out holds its pid
    a="$work/old/$f" b="$work/new/$f"
    if [ ! -f "$b" ]; then echo "FAIL: golden: $f only from $old"; fail=$((fail + 1)); continue; fi
    case "$f" in
    ./stdout | ./stderr | *.csv | *.json | *.txt | *.md) cmp -s <(mask "$a") <(mask "$b") ;;
    *) cmp -s "$a" "$b" ;;
    esac && pass=$((pass + 1)) || {
        echo "FAIL: golden: $f differs"
        fail=$((fail + 1))
        case "$f" in ./stdout | ./stderr | *.csv | *.json | *.txt | *.md) diff <(mask "$a") <(mask "$b") | head -6 ;; esac
    }
done
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
