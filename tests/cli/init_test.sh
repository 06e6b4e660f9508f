#!/usr/bin/env bash
# bin/train --init CKPT from the outside: a new run from a checkpoint's
# weights (fine-tuning) starts where those weights are, with fresh AdamW
# moments, step 0 and its own schedule; it accepts a model of weights alone
# (as bin/convert writes), which --resume refuses; it is deterministic and
# resumes exactly; contradicting model options and other refusals are one
# line and exit status 2.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora

small_corpora  # a.txt, b.txt, a, b, SMALL
# The model to start from, trained well below a new one's loss, and the same
# weights without the optimizer's state.
expect_ok "train base" $B/train --data "$tmp/a" --out "$tmp/base.ckpt" "${SMALL[@]}" --max-iters 150 --lr 3e-3 --warmup-iters 10
expect_ok "weights only" /usr/bin/python3 -m tests.tools.ckpt_forge weights-only "$tmp/base.ckpt" "$tmp/w.ckpt"
cp "$tmp/base.ckpt" "$tmp/base.copy"

# The data of one training window: train.bin holds block_size + 1 tokens, so
# every batch is that window, which bin/eval scores whole.
mkdir -p "$tmp/one"
cp "$tmp/a/tokenizer.txt" "$tmp/a/val.bin" "$tmp/one/"
/usr/bin/python3 - "$tmp/a/train.bin" "$tmp/one/train.bin" 17 <<'PY'
import struct, sys
raw = open(sys.argv[1], "rb").read()
ver, width, vocab, _ = struct.unpack("<IIQQ", raw[8:32])
n = int(sys.argv[3])
open(sys.argv[2], "wb").write(raw[:8] + struct.pack("<IIQQ", ver, width, vocab, n) + raw[32:32 + n * width])
PY

# The first step's loss is the checkpoint's loss on that window (dropout 0),
# far below a new model's; the first learning rate is the warm-up's first.
ONE=(--batch-size 2 --max-iters 1 --eval-iters 1 --warmup-iters 10 --lr 1e-3)
expect_ok "init one step" $B/train --data "$tmp/one" --out "$tmp/i1.ckpt" --init "$tmp/w.ckpt" "${ONE[@]}" --log "$tmp/i1.csv"
grep -q "^init: the weights of .*w.ckpt; a new run" "$tmp/out" && ok || bad "init: no start-up line: $(head -c 400 "$tmp/out")"
expect_ok "new one step" $B/train --data "$tmp/one" --out "$tmp/n1.ckpt" "${ONE[@]}" "${SMALL[@]:0:8}" --log "$tmp/n1.csv"
expect_ok "eval the window" $B/eval --model "$tmp/w.ckpt" --data "$tmp/one/train.bin" --json
if /usr/bin/python3 - "$tmp/i1.csv" "$tmp/n1.csv" "$tmp/out" <<'PY'; then ok; else bad "init: first-step loss"; fi
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first = [r for r in rows if r["step"] == "1"][0]
new = [r for r in csv.DictReader(open(sys.argv[2])) if r["step"] == "1"][0]
ev = json.load(open(sys.argv[3]))
loss, fresh, want = float(first["train_loss"]), float(new["train_loss"]), ev["loss"]
assert abs(loss - want) <= 1e-5 * want + 2e-6, (loss, want)
assert loss < 0.5 * fresh, (loss, fresh)
assert abs(float(first["lr"]) - 1e-4) < 1e-9, first["lr"]  # step 0 of a new schedule: lr / warm-up
print(f"first step {loss:.6f}, bin/eval {want:.6f}, a new model {fresh:.6f}")
PY

# Fresh moments: the same weights with and without the optimizer's state
# give the same run, byte for byte; and after one step from zero moments
# v = m^2 (beta1 0.9, beta2 0.99: m = 0.1 g, v = 0.01 g^2).
RUN=(--data "$tmp/a" --batch-size 4 --eval-iters 1 --log-interval 1)
expect_ok "init with moments" $B/train "${RUN[@]}" --out "$tmp/im.ckpt" --init "$tmp/base.ckpt" --max-iters 3
expect_ok "init without" $B/train "${RUN[@]}" --out "$tmp/iw.ckpt" --init "$tmp/w.ckpt" --max-iters 3
cmp -s "$tmp/im.ckpt" "$tmp/iw.ckpt" && ok || bad "init: the checkpoint's moments changed the run"
cmp -s "$tmp/base.ckpt" "$tmp/base.copy" && ok || bad "init: the checkpoint it started from changed"
expect_ok "init deterministic" $B/train "${RUN[@]}" --out "$tmp/iw2.ckpt" --init "$tmp/w.ckpt" --max-iters 3
cmp -s "$tmp/iw.ckpt" "$tmp/iw2.ckpt" && ok || bad "init: two runs differ"
expect_ok "init step 1" $B/train "${RUN[@]}" --out "$tmp/s1.ckpt" --init "$tmp/base.ckpt" --max-iters 1
if /usr/bin/python3 - "$tmp/s1.ckpt" "$tmp/base.ckpt" <<'PY'; then ok; else bad "init: moments after one step"; fi
import sys
import numpy as np
from harness.safetensors_np import read_safetensors
t, meta = read_safetensors(sys.argv[1])
old, old_meta = read_safetensors(sys.argv[2])
assert meta["step"] == "1" and int(old_meta["step"]) > 1, (meta["step"], old_meta["step"])
m = np.concatenate([t[k].ravel() for k in t if k.startswith("optim.m.")]).astype(np.float64)
v = np.concatenate([t[k].ravel() for k in t if k.startswith("optim.v.")]).astype(np.float64)
live = np.abs(m) > 1e-12
assert live.mean() > 0.5, live.mean()
assert np.allclose(v[live], m[live] ** 2, rtol=1e-4, atol=0), np.abs(v[live] / m[live] ** 2 - 1).max()
old_v = np.concatenate([old[k].ravel() for k in old if k.startswith("optim.v.")]).astype(np.float64)
assert not np.allclose(old_v[live], m[live] ** 2, rtol=1e-2), "the old moments would pass too: the test proves nothing"
PY

# An --init run resumes exactly: stopped at step 3 and resumed, it ends where
# the uninterrupted run does, dropout on.
DROP=(--init "$tmp/w.ckpt" --max-iters 6 --dropout 0.1)
expect_ok "init full" $B/train "${RUN[@]}" --out "$tmp/full.ckpt" "${DROP[@]}"
expect_ok "init part" $B/train "${RUN[@]}" --out "$tmp/part.ckpt" "${DROP[@]}" --stop-at 3
expect_ok "resume part" $B/train --data "$tmp/a" --out "$tmp/part.ckpt" --resume "$tmp/part.ckpt"
cmp -s "$tmp/full.ckpt" "$tmp/part.ckpt" && ok || bad "init: resumed run differs from the uninterrupted one"
head -c 4000 "$tmp/full.ckpt" | grep -qF 'dropout\":0.100000001' && ok || bad "init: --dropout not the new run's"

# Refusals: one line, exit 2, nothing written.
expect_error "resume weights only" "holds weights only, no optimizer state to continue: start a new run from it with --init" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --resume "$tmp/w.ckpt"
expect_error "init and resume" "--init and --resume cannot be used together" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --resume "$tmp/base.ckpt" --init "$tmp/w.ckpt"
expect_error "init n-layer" "--n-layer 3 differs from the checkpoint's 2" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/w.ckpt" --n-layer 3
expect_error "init n-embd" "--n-embd 32 differs from the checkpoint's 16" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/w.ckpt" --n-embd 32
expect_error "init pos" "--pos rope differs from the checkpoint's learned" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/w.ckpt" --pos rope
expect_error "init mixer" "--mixer grassmann differs from the checkpoint's attention" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/w.ckpt" --mixer grassmann
expect_error "init tokenizer" "trained with tokenizer [0-9a-f]{16} but '.*/b' has tokenizer" \
    $B/train --data "$tmp/b" --out "$tmp/x.ckpt" --init "$tmp/w.ckpt"
expect_error "init missing" "cannot open '.*nope.ckpt'" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/nope.ckpt"
expect_error "init text" "a.txt" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/a.txt"
[ -e "$tmp/x.ckpt" ] && bad "a refused run wrote its checkpoint" || ok

echo "init: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
