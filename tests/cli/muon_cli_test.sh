#!/usr/bin/env bash
# bin/train --optimizer muon from the outside: a resumed run equals an
# uninterrupted one byte for byte, so does a run on 1 thread and on 2 (at one
# parallel width), and a 2-rank job one process with twice the gradient
# accumulation; the checkpoint records the optimizer and a resume refuses
# another in one line; its checkpoint holds its state in AdamW's format; an
# AdamW checkpoint keeps no trace of Muon; Muon's
# options given to an AdamW run, and bad values, are one line and exit 2.
set -u
cd "$(dirname "$0")/../.."
source tests/cli/cli_lib.sh
B=$(realpath "$B")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe -x ASAN_OPTIONS=detect_leaks=0)

small_corpora
RUN=(--data "$tmp/a" "${SMALL[@]}" --mixer attention,grassmann --grassmann-rank 4 --grassmann-windows 1,2,4 --max-iters 12
     --warmup-iters 3 --eval-interval 4 --optimizer muon --muon-lr 0.03 --seed 5)
meta() { /usr/bin/python3 -c 'import sys; from harness.safetensors_np import read_safetensors
print(read_safetensors(sys.argv[1])[1]["train"])' "$1"; }

expect_ok "muon run" $B/train "${RUN[@]}" --threads 2 --out "$tmp/full.ckpt"
grep -q "^optimizer: muon on 9 hidden matrices" "$tmp/out" && ok || bad "no optimizer line: $(grep -m1 '^optimizer' "$tmp/out")"
# Muon's matrices keep their momentum alone (lm/optim.h); the checkpoint, in the format AdamW's state
# fills, holds their second moment as zeros and the other tensors' as AdamW's.
/usr/bin/python3 - "$tmp/full.ckpt" <<'EOF' && ok || bad "Muon's checkpoint does not hold its state in AdamW's format"
import sys
from harness.safetensors_np import read_safetensors
t = read_safetensors(sys.argv[1])[0]
for w in ("h.0.attn.qkv.weight", "h.1.mlp.fc.weight"):
    assert t["optim.m." + w].any() and not t["optim.v." + w].any(), w
for w in ("wte", "h.0.attn.qkv.bias", "h.1.ln1.weight"):
    assert t["optim.m." + w].any() and t["optim.v." + w].any(), w
EOF
train_json=$(meta "$tmp/full.ckpt")
case "$train_json" in *'"muon-lr":0.0299999993'*'"optimizer":"muon"'*) ok ;; *) bad "muon checkpoint's run options: $train_json" ;; esac

# Resume: the momentum buffers and AdamW's moments continue exactly.
expect_ok "muon to step 5" $B/train "${RUN[@]}" --threads 2 --stop-at 5 --out "$tmp/half.ckpt"
expect_ok "muon resume" $B/train --data "$tmp/a" --resume "$tmp/half.ckpt" --threads 2 --out "$tmp/resumed.ckpt"
grep -q "^optimizer: muon" "$tmp/out" && ok || bad "the resumed run is not Muon's"
cmp -s "$tmp/resumed.ckpt" "$tmp/full.ckpt" && ok || bad "a resumed Muon run differs from the uninterrupted one"

# Threads: at one parallel width (lm/threads.h), the same bytes on 1 thread as on 2: the Newton-Schulz
# products' tiles are the width's, not the threads'.
expect_ok "muon on 1 thread" env LM_PARALLEL_WIDTH=2 $B/train "${RUN[@]}" --threads 1 --out "$tmp/one.ckpt"
expect_ok "muon on 2 threads" env LM_PARALLEL_WIDTH=2 $B/train "${RUN[@]}" --threads 2 --out "$tmp/two.ckpt"
cmp -s "$tmp/one.ckpt" "$tmp/two.ckpt" && ok || bad "Muon on 1 thread differs from 2 threads"

# MPI: 2 ranks equal 1 process with --grad-accum 2, byte for byte.
if "${MPIRUN[@]}" -np 2 $B/train "${RUN[@]}" --threads 1 --out "$tmp/r2.ckpt" >"$tmp/out" 2>"$tmp/err"; then ok
else bad "2-rank Muon run: $(tail -c 300 "$tmp/err")"; fi
expect_ok "muon accum 2" $B/train "${RUN[@]}" --threads 1 --grad-accum 2 --out "$tmp/r1.ckpt"
cmp -s "$tmp/r2.ckpt" "$tmp/r1.ckpt" && ok || bad "Muon: 2 ranks vs --grad-accum 2: $(/usr/bin/python3 -m tests.tools.mpi_compare --ckpts "$tmp/r2.ckpt" "$tmp/r1.ckpt" 2>&1 | tail -2)"

# Muon is not AdamW: the same run's weights differ; an AdamW checkpoint has no Muon keys.
ADAMW=(--data "$tmp/a" "${SMALL[@]}" --mixer attention,grassmann --grassmann-rank 4 --grassmann-windows 1,2,4 --max-iters 12 --warmup-iters 3
       --eval-interval 4 --seed 5)
expect_ok "adamw run" $B/train "${ADAMW[@]}" --threads 2 --out "$tmp/adamw.ckpt"
grep -q "^optimizer:" "$tmp/out" && bad "an AdamW run prints an optimizer line" || ok
cmp -s "$tmp/adamw.ckpt" "$tmp/full.ckpt" && bad "Muon and AdamW wrote the same weights" || ok
case "$(meta "$tmp/adamw.ckpt")" in *muon*|*optimizer*) bad "AdamW checkpoint mentions Muon: $(meta "$tmp/adamw.ckpt")" ;; *) ok ;; esac
expect_ok "--optimizer adamw given" $B/train "${ADAMW[@]}" --threads 2 --optimizer adamw --out "$tmp/adamw2.ckpt"
cmp -s "$tmp/adamw.ckpt" "$tmp/adamw2.ckpt" && ok || bad "--optimizer adamw differs from the default"

# A resumed run keeps its optimizer.
expect_error "resume Muon as AdamW" "--optimizer adamw differs from the run's muon: a resumed run keeps its optimizer" \
    $B/train --data "$tmp/a" --resume "$tmp/half.ckpt" --optimizer adamw --out "$tmp/x.ckpt"
expect_error "resume AdamW as Muon" "--optimizer muon differs from the run's adamw" \
    $B/train --data "$tmp/a" --resume "$tmp/adamw.ckpt" --optimizer muon --out "$tmp/x.ckpt"
expect_ok "resume Muon naming it" $B/train --data "$tmp/a" --resume "$tmp/half.ckpt" --optimizer muon --threads 2 --out "$tmp/named.ckpt"
cmp -s "$tmp/named.ckpt" "$tmp/full.ckpt" && ok || bad "resume with --optimizer muon differs"
# --init starts a new run: with the optimizer this command names.
expect_ok "init into muon" $B/train --data "$tmp/a" --init "$tmp/adamw.ckpt" --optimizer muon --max-iters 2 --out "$tmp/init.ckpt"
grep -q "^optimizer: muon" "$tmp/out" && ok || bad "--init --optimizer muon is not a Muon run"

# Muon's options with AdamW would change nothing: refused, not ignored (the resumed run's optimizer too).
expect_error "muon lr with adamw" "--muon-lr is Muon's, and this run's optimizer is adamw: give --optimizer muon, or leave --muon-lr out" \
    $B/train "${ADAMW[@]}" --muon-lr 0.03 --out "$tmp/x.ckpt"
expect_error "muon momentum with adamw" "--muon-momentum is Muon's" $B/train "${ADAMW[@]}" --optimizer adamw --muon-momentum 0.9 --out "$tmp/x.ckpt"
expect_error "muon weight decay with adamw" "--muon-weight-decay is Muon's" $B/train "${ADAMW[@]}" --muon-weight-decay 0.1 --out "$tmp/x.ckpt"
expect_error "muon lr on an adamw resume" "--muon-lr is Muon's, and this run's optimizer is adamw" \
    $B/train --data "$tmp/a" --resume "$tmp/adamw.ckpt" --muon-lr 0.03 --out "$tmp/x.ckpt"
[ -e "$tmp/x.ckpt" ] && bad "a refused run wrote a checkpoint" || ok

# Bad values.
expect_error "unknown optimizer" "--optimizer must be one of adamw, muon \(got 'sgd'\)" \
    $B/train "${ADAMW[@]}" --optimizer sgd --out "$tmp/x.ckpt"
expect_error "momentum 1" "muon-momentum" $B/train "${RUN[@]}" --muon-momentum 1 --out "$tmp/x.ckpt"
expect_error "negative muon lr" "muon-lr" $B/train "${RUN[@]}" --muon-lr -1 --out "$tmp/x.ckpt"

echo "muon_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
