#!/usr/bin/env bash
# bin/train's loss mask from outside: probe data carries train.mask, training
# says it uses it (and --no-loss-mask turns it off), bad mask files are one
# line and exit 2, and the masked loss and gradients equal PyTorch's
# cross-entropy over the marked targets only.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok

SMALL=(--n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --window-align 16 --batch-size 4 --eval-iters 2)
expect_ok "probegen" $B/probegen --task mqar --out "$tmp/pg" --seq-len 16 --pairs 2 --symbols 4 --train-seqs 20 --val-seqs 4
if [ -s "$tmp/pg/train.mask" ] && [ -s "$tmp/pg/val.mask" ]; then ok; else bad "probegen wrote no train.mask"; fi
expect_ok "train masked" $B/train --data "$tmp/pg" --out "$tmp/m.ckpt" "${SMALL[@]}" --max-iters 3
if grep -q "loss mask: only the targets marked in train.mask val.mask" "$tmp/out"; then ok; else bad "no loss-mask line"; fi
expect_ok "train unmasked" $B/train --data "$tmp/pg" --out "$tmp/u.ckpt" "${SMALL[@]}" --max-iters 3 --no-loss-mask
if grep -q "loss mask" "$tmp/out"; then bad "--no-loss-mask still masks"; else ok; fi

# The masked loss is the mean over far fewer targets: not the unmasked one.
expect_ok "dump masked" $B/train --data "$tmp/pg" --dump-grads "$tmp/m.st" "${SMALL[@]}"
expect_ok "dump unmasked" $B/train --data "$tmp/pg" --dump-grads "$tmp/u.st" "${SMALL[@]}" --no-loss-mask
if /usr/bin/python3 - "$tmp/m.st" "$tmp/u.st" <<'PY'
import os, sys
from harness.safetensors_np import read_safetensors
from tests.parity.parity import check
t, m = read_safetensors(sys.argv[1])
_, u = read_safetensors(sys.argv[2])
marked = int((t["targets"] >= 0).sum())
# Probe windows: 2 answers per 16-token sequence are marked, the rest ignored (-1).
assert 0 < marked < t["targets"].size and set(t["targets"][t["targets"] < 0].tolist()) == {-1}, t["targets"]
assert abs(float(m["loss"]) - float(u["loss"])) > 1e-3, (m["loss"], u["loss"])
sys.exit(0 if check("masked loss (probe answers only)", sys.argv[1]) else 1)
PY
then ok; else bad "masked parity with PyTorch"; fi

# Bad mask files: one line, exit 2.
cp -r "$tmp/pg" "$tmp/short"
$B/probegen --task mqar --out "$tmp/other" --seq-len 16 --pairs 2 --symbols 4 --train-seqs 21 --val-seqs 4 >/dev/null
cp "$tmp/other/train.mask" "$tmp/short/train.mask"
expect_error "train.mask of another file" "covers .* tokens" $B/train --data "$tmp/short" --out "$tmp/x.ckpt" "${SMALL[@]}" --max-iters 1
cp -r "$tmp/pg" "$tmp/bad"
printf 'garbage' >"$tmp/bad/val.mask"
expect_error "corrupt val.mask" "mask" $B/train --data "$tmp/bad" --out "$tmp/x.ckpt" "${SMALL[@]}" --max-iters 1
expect_ok "corrupt mask ignored with --no-loss-mask" $B/train --data "$tmp/bad" --out "$tmp/x.ckpt" "${SMALL[@]}" --max-iters 1 --no-loss-mask

echo "loss mask: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
