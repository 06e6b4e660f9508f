#!/usr/bin/env bash
# The run tools say what they show and refuse what would mislead: bin/eval,
# bin/sample and bin/inspect read a run folder's best.ckpt (its ckpt when
# it has none), said in one line; a --max-iters or --stop-at that would end
# a resumed run where it stands is refused, and the run left as it was; a
# run folder's config.json repeats the whole run, however it was stopped;
# --out and --log into new folders create them; every val loss (progress
# lines, logs, bin/info, the runs page) says whether it is the estimate or
# the full split, and --best-by full chooses best.ckpt by bin/eval's number;
# bin/info --list groups runs by data and tokenizer, --out's checkpoints too.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora

small_corpora  # a.txt, b.txt, a, b
TINY=(--n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 2 --log-interval 5
      --warmup-iters 2)
R=$tmp/runs
json_ok() {  # NAME FILE PYTHON: FILE holds one JSON value for which PYTHON (on j) is true
    /usr/bin/python3 -c "import json, sys; j = json.load(open(sys.argv[1])); assert $3, j" "$2" 2>/dev/null && ok \
        || bad "$1: $(head -c 400 "$2")"
}
one_line() {  # NAME PATTERN: stderr ($tmp/err) is exactly one line, matching PATTERN
    [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qE -e "$2" "$tmp/err" && ok || bad "$1: stderr '$(head -c 400 "$tmp/err")'"
}

# ---- --model RUN: its best.ckpt, said in one line --------------------------------------
# Stopped at 5 with validation at 0 and 3: best.ckpt (step 3 or 0) is not ckpt (step 5).
expect_ok "a run folder" $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 8 --eval-interval 3 --stop-at 5 --run "$R/m"
best_step=$($B/info "$R/m" --json | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["best_step"])')
picked="--model $R/m: reading $R/m/best.ckpt \(step $best_step\), the run's lowest validation loss by the estimate over 2 batches; its last checkpoint is $R/m/ckpt"
expect_ok "bin/sample --model RUN" $B/sample --model "$R/m" --tokens 20 --seed 3
one_line "bin/sample --model RUN" "^sample: $picked$"
cp "$tmp/out" "$tmp/sample.run"
$B/sample --model "$R/m/best.ckpt" --tokens 20 --seed 3 >"$tmp/sample.best" 2>/dev/null
cmp -s "$tmp/sample.run" "$tmp/sample.best" && ok || bad "bin/sample --model RUN is not its best.ckpt's text"
expect_ok "bin/eval --model RUN" $B/eval --model "$R/m" --data "$tmp/a" --json
one_line "bin/eval --model RUN" "^eval: $picked$"
cp "$tmp/out" "$tmp/eval.run"
$B/eval --model "$R/m/best.ckpt" --data "$tmp/a" --json >"$tmp/eval.best" 2>/dev/null
$B/eval --model "$R/m/ckpt" --data "$tmp/a" --json >"$tmp/eval.last" 2>/dev/null
cmp -s "$tmp/eval.run" "$tmp/eval.best" && ! cmp -s "$tmp/eval.run" "$tmp/eval.last" && ok \
    || bad "bin/eval --model RUN: not its best.ckpt's loss, or best.ckpt is its ckpt: $(cat "$tmp/eval.run" "$tmp/eval.last")"
expect_ok "bin/inspect --model RUN" $B/inspect --model "$R/m" --prompt "The whale" --out "$tmp/insp.run"
one_line "bin/inspect --model RUN" "^inspect: $picked$"
$B/inspect --model "$R/m/best.ckpt" --prompt "The whale" --out "$tmp/insp.best" >/dev/null 2>&1
cmp -s <(sed "s#$tmp/insp.run##g; s#$R/m/best.ckpt##g; s#$R/m##g" "$tmp/insp.run/inspect.json") \
    <(sed "s#$tmp/insp.best##g; s#$R/m/best.ckpt##g" "$tmp/insp.best/inspect.json") && ok \
    || bad "bin/inspect --model RUN is not its best.ckpt's report"
cp -r "$R/m" "$R/nobest" && rm "$R/nobest/best.ckpt"
expect_ok "bin/eval --model RUN without best.ckpt" $B/eval --model "$R/nobest" --data "$tmp/a" --json
one_line "bin/eval --model RUN without best.ckpt" \
    "^eval: --model $R/nobest: reading $R/nobest/ckpt \(step 5\), the run's last checkpoint: it has no best.ckpt$"
cmp -s "$tmp/out" "$tmp/eval.last" && ok || bad "bin/eval --model RUN without best.ckpt: not its ckpt's loss"
mkdir -p "$tmp/nockpt"
nockpt="'$tmp/nockpt' is a folder that holds no checkpoint"
expect_error "bin/sample --model of a folder with no checkpoint" "$nockpt" $B/sample --model "$tmp/nockpt"
expect_error "bin/eval --model of a folder with no checkpoint" "$nockpt" $B/eval --model "$tmp/nockpt" --data "$tmp/a"
expect_error "bin/inspect --model of a folder with no checkpoint" "$nockpt" \
    $B/inspect --model "$tmp/nockpt" --prompt x --out "$tmp/insp.none"

# ---- a --max-iters or --stop-at at or below the resumed step: refused ------------------
cp -r "$R/m" "$tmp/m.copy"
for at in 3 5; do
    expect_error "--resume RUN --max-iters $at at step 5" \
        "^train: error: --max-iters $at is not above step 5, where the run resumes: nothing would be trained" \
        $B/train --resume "$R/m" --max-iters $at
    expect_error "--resume RUN --stop-at $at at step 5" \
        "^train: error: --stop-at $at is not above step 5, where the run resumes: nothing would be trained" \
        $B/train --resume "$R/m" --stop-at $at
done
diff -r "$R/m" "$tmp/m.copy" >/dev/null && ok || bad "a refused --max-iters or --stop-at changed the run folder"
expect_ok "a checkpoint at step 4 of 4" $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 4 --out "$tmp/done.ckpt"
cp "$tmp/done.ckpt" "$tmp/done.copy"
expect_error "--resume CKPT --max-iters 2 at step 4" "--max-iters 2 is not above step 4, where the run resumes" \
    $B/train --resume "$tmp/done.ckpt" --max-iters 2
expect_error "--resume CKPT --stop-at 9 of a finished schedule" \
    "--stop-at: the run's schedule ends at step 4, where it resumes: nothing would be trained \(extend it with a --max-iters above 4\)" \
    $B/train --resume "$tmp/done.ckpt" --stop-at 9
cmp -s "$tmp/done.ckpt" "$tmp/done.copy" && ok || bad "a refused --resume rewrote the checkpoint"
expect_ok "--resume CKPT --max-iters 6 extends it" $B/train --resume "$tmp/done.ckpt" --max-iters 6
grep -q "steps 4..6 of 6" "$tmp/out" && ok || bad "--max-iters 6 after step 4: $(grep '^train:' "$tmp/out")"

# ---- config.json: the run's options, not where one invocation stopped ------------------
expect_ok "a run stopped at 6" $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 12 --eval-interval 4 --stop-at 6 --run "$R/c1"
json_ok "config.json of a run stopped at 6" "$R/c1/config.json" '"stop-at" not in j and j["max-iters"] == 12'
/usr/bin/python3 - "$R/c1/config.json" <<'PY'  # as a config.json from before: with the invocation's stop
import json, sys
j = json.load(open(sys.argv[1]))
j["stop-at"] = 6
json.dump(j, open(sys.argv[1], "w"))
PY
expect_ok "resumed to the end" $B/train --resume "$R/c1" --stop-at 9
expect_ok "resumed to the end" $B/train --resume "$R/c1"
json_ok "config.json after two resumes" "$R/c1/config.json" '"stop-at" not in j and j["max-iters"] == 12'
expect_ok "--config RUN/config.json --run NEW" $B/train --config "$R/c1/config.json" --run "$R/c2"
for f in ckpt best.ckpt; do
    cmp -s "$R/c1/$f" "$R/c2/$f" && ok || bad "--config of a resumed run's config.json: $f is not the run's"
done
cmp -s <(cut -d, -f1-7 "$R/c1/log.csv") <(cut -d, -f1-7 "$R/c2/log.csv") && ok \
    || bad "--config of a resumed run's config.json: the log is not the run's"

# ---- --out and --log into a folder that is not there yet: created, as --run's ------------
expect_ok "--out and --log in new folders" $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 2 \
    --out "$tmp/new/bpe/model.ckpt" --log "$tmp/newlog/run.csv"
[ -f "$tmp/new/bpe/model.ckpt" ] && [ -f "$tmp/newlog/run.csv" ] && ok || bad "--out and --log in new folders: $(ls -R "$tmp/new" "$tmp/newlog" 2>&1)"
expect_ok "--resume of it" $B/train --resume "$tmp/new/bpe/model.ckpt" --max-iters 3 --log "$tmp/newlog/run.csv"
: >"$tmp/plain"
expect_error "--out through a file" "^train: error: --out '$tmp/plain/x/model.ckpt': '$tmp/plain' is not a directory$" \
    $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 2 --out "$tmp/plain/x/model.ckpt"

# ---- every val loss says which it is; --best-by full chooses best.ckpt by the whole split ---------
vargs=(--data "$tmp/a" "${TINY[@]}" --max-iters 8 --eval-interval 2)
expect_ok "a run by the estimate" $B/train "${vargs[@]}" --run "$R/est" --stop-at 6
grep -q "^validation: the estimate over 2 batches of 4 x 16 (128 of val's [0-9]* tokens), at step 0, every 2 steps and at the end; best.ckpt by it" "$tmp/out" \
    && [ "$(grep -c '| val loss ' "$tmp/out")" = 4 ] \
    && [ "$(grep -c '| val loss [0-9.]* (the estimate over 2 batches) | [0-9.]* bits per byte' "$tmp/out")" = 4 ] && ok \
    || bad "the estimate's lines do not say what they are: $(grep -E 'val|validation' "$tmp/out")"
header=step,tokens,train_loss,val_loss,val_bits_per_byte,lr,grad_norm,ms_per_step,elapsed_s,threads,val_batches,val_full_loss,val_full_bits_per_byte
[ "$(head -1 "$R/est/log.csv")" = "$header" ] && [ "$(awk -F, 'NR > 1 && $4 != "" {print $11 "/" $12}' "$R/est/log.csv" | sort -u)" = "2/" ] && ok \
    || bad "log.csv by the estimate: $(head -3 "$R/est/log.csv")"
expect_ok "bin/info of a run by the estimate" $B/info "$R/est"
grep -q "^val loss: *last [0-9.]*, best [0-9.]* at step [0-9]* (best.ckpt) | the estimate over 2 batches (bin/eval scores the whole split)$" "$tmp/out" \
    && ok || bad "bin/info does not say the estimate: $(grep '^val' "$tmp/out")"
expect_ok "bin/info --json of a run by the estimate" $B/info "$R/est" --json
json_ok "bin/info --json by the estimate" "$tmp/out" 'j["val_loss_kind"] == "estimate" and j["val_loss_batches"] == 2 and "best_by" not in j["options"]'
# A log from before the last three columns: its rows get them, empty, when the run goes on.
cut -d, -f1-10 "$R/est/log.csv" >"$tmp/old.csv" && mv "$tmp/old.csv" "$R/est/log.csv"
expect_ok "--resume with a log of ten columns" $B/train --resume "$R/est" --json
[ "$(awk -F, '{print NF}' "$R/est/log.csv" | sort -u)" = 13 ] && [ "$(head -1 "$R/est/log.csv")" = "$header" ] && ok \
    || bad "an older log resumed: $(awk -F, '{print NF}' "$R/est/log.csv" | sort -u | tr '\n' ' ')"
json_ok "bin/train --json by the estimate" "$tmp/out" 'j["val_loss_kind"] == "estimate"'
expect_ok "a run by the full split" $B/train "${vargs[@]}" --run "$R/full" --best-by full --stop-at 6
grep -q "^validation: the full split ([0-9]* tokens, [0-9]* forwards of 4 x 16) and the estimate over 2 batches" "$tmp/out" \
    && [ "$(grep -c '| val loss [0-9.]* (the full split) | [0-9.]* bits per byte | the estimate over 2 batches: [0-9.]*$' "$tmp/out")" = 4 ] && ok \
    || bad "the full split's lines do not say what they are: $(grep -E 'val|validation' "$tmp/out")"
expect_error "--resume --best-by estimate of a run by the full split" \
    "--best-by estimate differs from the run's full: a resumed run keeps what chooses its best.ckpt" \
    $B/train --resume "$R/full" --best-by estimate
expect_error "--best-by of no kind" "--best-by must be estimate or full \(got 'lowest'\)" $B/train "${vargs[@]}" --run "$R/x" --best-by lowest
expect_ok "--resume of a run by the full split" $B/train --resume "$R/full" --json
json_ok "bin/train --json by the full split" "$tmp/out" 'j["val_loss_kind"] == "full"'
# best.ckpt is the lowest of the log's full-split losses, each bin/eval's number for the weights it had
/usr/bin/python3 - "$R/full/log.csv" >"$tmp/fullbest" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["val_full_loss"]]
assert len(rows) == 5 and all(r["val_loss"] and r["val_batches"] == "2" for r in rows), rows
best = min(rows, key=lambda r: float(r["val_full_loss"]))
print(best["step"], best["val_full_loss"], rows[-1]["val_full_loss"])
PY
read -r fstep floss flast <"$tmp/fullbest"
expect_ok "bin/info --json of a run by the full split" $B/info "$R/full" --json
json_ok "bin/info --json by the full split" "$tmp/out" \
    "j['val_loss_kind'] == 'full' and j['val_loss_batches'] is None and j['options']['best_by'] == 'full' and j['best_step'] == ${fstep:--1} and abs(j['best_val_loss'] - ${floss:-0}) < 1e-6 and abs(j['val_loss'] - ${flast:-0}) < 1e-6"
for f in best.ckpt ckpt; do
    want=$([ $f = ckpt ] && echo "$flast" || echo "$floss")
    $B/eval --model "$R/full/$f" --data "$tmp/a" --json >"$tmp/out" 2>/dev/null
    json_ok "bin/eval of $f: the full split's loss" "$tmp/out" "abs(j['loss'] - ${want:-0}) < 1e-5"
done
expect_ok "bin/info of a run by the full split" $B/info "$R/full"
grep -q "^val loss: .* (best.ckpt) | the full split (--best-by full), as bin/eval scores it$" "$tmp/out" && ok \
    || bad "bin/info does not say the full split: $(grep '^val' "$tmp/out")"
st_data() {  # a safetensors file's tensors, its header left out
    /usr/bin/python3 -c 'import struct, sys; b = open(sys.argv[1], "rb").read(); sys.stdout.buffer.write(b[8 + struct.unpack("<Q", b[:8])[0]:])' "$1"
}
cmp -s <(st_data "$R/est/ckpt") <(st_data "$R/full/ckpt") && ok || bad "--best-by full changed the weights trained"
/usr/bin/python3 -m harness.runs_page "$R/full" "$R/est" --sample-tokens 0 --out "$tmp/runs.html" >/dev/null 2>"$tmp/err" \
    && grep -q '"val loss of"\],"rows":\[\["full",[^]]*"full split"\],\["est",[^]]*"estimate, 2 batches"\]' "$tmp/runs.html" && ok \
    || bad "the runs page does not say which val loss: $(cat "$tmp/err"; grep -o '"val loss of.\{0,200\}' "$tmp/runs.html")"

# ---- bin/info --list: grouped by data and tokenizer; --out's checkpoints listed too ---------------
expect_ok "prepare a BPE corpus" $B/prepare --input "$tmp/b.txt" --out "$tmp/bpe" --tokenizer bpe --vocab-size 300
expect_ok "a BPE run" $B/train --data "$tmp/bpe" "${TINY[@]}" --max-iters 4 --run "$R/bp"
expect_ok "the demo's --out" $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 4 --out "$R/demo/model.ckpt" --log "$R/demo/log.csv"
cp "$R/demo/model.ckpt" "$R/loose.ckpt"
expect_ok "bin/info --list" $B/info --list "$R"
cp "$tmp/out" "$tmp/list.txt"
/usr/bin/python3 - "$tmp/list.txt" "$tmp/a" "$tmp/bpe" <<'PY' && ok || bad "bin/info --list does not group by data and tokenizer: $(cat "$tmp/list.txt")"
import os, re, sys
text, a, bpe = open(sys.argv[1]).read(), os.path.realpath(sys.argv[2]), os.path.realpath(sys.argv[3])
blocks = [b.splitlines() for b in text.strip().split("\n\n")]
want = {a: ("char", {"m", "nobest", "c1", "c2", "est", "full", "demo/model.ckpt", "loose.ckpt"}), bpe: ("bpe", {"bp"})}
seen = {}
for b in blocks:
    m = re.match(r"data (.*) \(hash [0-9a-f]{16}\) \| tokenizer (\w+), \d+ tokens \(hash [0-9a-f]{16}\)$", b[0])
    assert m and b[1].split()[:6] == ["run", "step", "tokens", "best", "val", "last"] and "val from" in b[1], b[:2]
    rows = [r.split() for r in b[2:]]
    best = [float(r[3]) for r in rows]
    assert best == sorted(best), ("not by best val within the group", b)
    seen[m.group(1)] = (m.group(2), {r[0] for r in rows})
    for r in rows:
        assert r[5] == ("full split" if r[0] == "full" else "2 batches").split()[0], r
assert seen == want, (seen, want)
PY
expect_ok "bin/info --list --json" $B/info --list "$R" --json
json_ok "bin/info --list --json: groups" "$tmp/out" \
    'len({o["group"] for o in j}) == 2 and [o["group"] for o in j] == sorted([o["group"] for o in j], key=[o["group"] for o in j].index) and all(o["data"]["hash"] == o["group"].split("/")[0] and o["tokenizer"]["hash"] == o["group"].split("/")[1] for o in j) and {o["name"]: o["run"] for o in j if not o["run"]} == {"demo/model.ckpt": False, "loose.ckpt": False}'
expect_ok "bin/info --list of a folder with a checkpoint alone" $B/info --list "$R/demo"
grep -q "^model.ckpt " "$tmp/out" && ok || bad "bin/info --list DIR with DIR/model.ckpt: $(cat "$tmp/out")"

echo "run_tools: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
