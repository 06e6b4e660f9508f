#!/usr/bin/env bash
# Limits and hostile headers from the outside: a checkpoint claiming a model
# larger than memory is refused by bin/eval, bin/sample and bin/inspect
# before they allocate (or read) it; a header with a duplicate key, offsets
# past 2^53 or written as reals, or a 200 MB length field gives one line and
# exit status 2; a run's options stored in a checkpoint keep their bounds.
set -u
cd "$(dirname "$0")/../.."
source tests/cli/cli_lib.sh
forge() { /usr/bin/python3 -m tests.tools.ckpt_forge "$@"; }

for i in $(seq 1 40); do echo "Call me Ishmael, line $i of a small corpus."; done >"$tmp/a.txt"
expect_ok "prepare" $B/prepare --input "$tmp/a.txt" --out "$tmp/a"
SMALL=(--n-layer 1 --n-head 1 --n-embd 8 --block-size 8 --batch-size 2 --eval-iters 1 --max-iters 2)
expect_ok "train" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" "${SMALL[@]}"

# Larger than memory: the file is sparse (its 400 GiB take no disk), and the
# refusal comes from the header alone, at once.
forge huge "$tmp/good.ckpt" "$tmp/huge.ckpt"
MEM="loading .* needs [0-9.]+ GiB \(the file, read whole; the weights; activations .*\) but [0-9.]+ GiB are available"
expect_error "eval: model larger than memory" "$MEM" $B/eval --model "$tmp/huge.ckpt" --data "$tmp/a/val.bin"
expect_error "sample: model larger than memory" "$MEM" $B/sample --model "$tmp/huge.ckpt" --tokens 5
expect_error "inspect: model larger than memory" "$MEM" $B/inspect --model "$tmp/huge.ckpt" --prompt "Call" --out "$tmp/i"
expect_error "train --resume: model larger than memory" "this run needs [0-9.]+ GiB \(the checkpoint file, weights" \
    $B/train --data "$tmp/a" --out "$tmp/r.ckpt" --resume "$tmp/huge.ckpt"
[ ! -e "$tmp/i" ] && ok || bad "inspect wrote output for a model it refused"

# Hostile headers (checksums made to match, so the parsing is what refuses).
forge dupkey "$tmp/good.ckpt" "$tmp/dup.ckpt"
forge bigoffset "$tmp/good.ckpt" "$tmp/big.ckpt"
forge realoffset "$tmp/good.ckpt" "$tmp/real.ckpt"
forge bighdr "$tmp/good.ckpt" "$tmp/hdr.ckpt"
for p in eval sample; do
    [ $p = eval ] && extra=(--data "$tmp/a/val.bin") || extra=(--tokens 5)
    expect_error "$p: duplicate key in header" "not valid JSON" $B/$p --model "$tmp/dup.ckpt" "${extra[@]}"
    expect_error "$p: offsets past 2^53" "bad data offsets" $B/$p --model "$tmp/big.ckpt" "${extra[@]}"
    expect_error "$p: offsets as reals" "bad data offsets" $B/$p --model "$tmp/real.ckpt" "${extra[@]}"
    expect_error "$p: 200 MB header" "header, more than the 100000000" $B/$p --model "$tmp/hdr.ckpt" "${extra[@]}"
done
expect_ok "the good checkpoint still loads" $B/sample --model "$tmp/good.ckpt" --tokens 5

echo "limits: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
