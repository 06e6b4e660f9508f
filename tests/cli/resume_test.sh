#!/usr/bin/env bash
# bin/train --resume CKPT alone continues a run exactly: the data path, the
# output (the checkpoint itself, continued in place) and every option come
# from the checkpoint, so a run stopped and resumed with nothing else, from
# another directory, ends byte for byte where the uninterrupted run does
# (--no-loss-mask included); an option given may still change (--max-iters);
# the same corpus elsewhere resumes, and so does another one given with
# --data (a curriculum's next stage); its own corpus changed since is refused
# in one line and the checkpoint left as it was; a checkpoint that names no data asks for
# --data; and the line Ctrl-C prints is a command that continues the run and
# its log.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora
case $B in /*) ;; *) B=$PWD/$B ;; esac  # the resumes run from another directory

small_corpora  # a.txt, b.txt, a, b, SMALL
mkdir -p "$tmp/elsewhere"
real=$(cd "$tmp" && pwd -P)  # checkpoints name their data by its absolute path
# header_train CKPT: the run options a checkpoint keeps (JSON)
header_train() {
    /usr/bin/python3 -c 'import json,struct,sys
f = open(sys.argv[1], "rb"); h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
print(h["__metadata__"]["train"])' "$1"
}

# Stopped at step 11 and resumed with --resume alone, from another directory:
# the uninterrupted run's checkpoint, byte for byte.
cp -r "$tmp/a" "$tmp/c"
args=(--data "$tmp/c" "${SMALL[@]}" --max-iters 24 --eval-interval 8 --dropout 0.1 --lr 2e-3 --warmup-iters 5)
expect_ok "uninterrupted" $B/train "${args[@]}" --out "$tmp/full.ckpt"
expect_ok "stopped at 11" $B/train "${args[@]}" --out "$tmp/half.ckpt" --stop-at 11
cp "$tmp/half.ckpt" "$tmp/half11.ckpt"
(cd "$tmp/elsewhere" && $B/train --resume ../half.ckpt >"$tmp/out" 2>"$tmp/err") && ok || bad "--resume alone: $(cat "$tmp/err")"
grep -q "steps 11..24 of 24" "$tmp/out" && ok || bad "--resume alone did not continue at step 11: $(grep '^train:' "$tmp/out")"
cmp -s "$tmp/full.ckpt" "$tmp/half.ckpt" && ok || bad "--resume alone: the checkpoint differs from the uninterrupted run's"
[ -z "$(ls -A "$tmp/elsewhere")" ] && ok || bad "--resume alone wrote into the directory it ran in: $(ls "$tmp/elsewhere")"
header_train "$tmp/full.ckpt" | grep -q "\"data\":\"$real/c\",\"data_hash\":\"[0-9a-f]\{16\}\"" && ok ||
    bad "the checkpoint does not name its data: $(header_train "$tmp/full.ckpt")"

# A run option given with --resume alone still changes: the schedule runs on to 30.
cp "$tmp/half11.ckpt" "$tmp/longer.ckpt"
expect_ok "--resume with --max-iters" $B/train --resume "$tmp/longer.ckpt" --max-iters 30
grep -q "steps 11..30 of 30" "$tmp/out" && ok || bad "--max-iters given with --resume: $(grep '^train:' "$tmp/out")"

# --no-loss-mask is the run's: on data with loss masks, a resume alone keeps learning every target.
expect_ok "probe data" $B/probegen --task mqar --out "$tmp/mqar" --seq-len 16 --pairs 3 --symbols 12
margs=(--data "$tmp/mqar" "${SMALL[@]}" --max-iters 12 --eval-interval 4 --window-align 17 --no-loss-mask)
expect_ok "uninterrupted, no loss mask" $B/train "${margs[@]}" --out "$tmp/mfull.ckpt"
expect_ok "stopped, no loss mask" $B/train "${margs[@]}" --out "$tmp/mhalf.ckpt" --stop-at 5
expect_ok "resumed alone, no loss mask" $B/train --resume "$tmp/mhalf.ckpt"
cmp -s "$tmp/mfull.ckpt" "$tmp/mhalf.ckpt" && ok || bad "--resume alone dropped --no-loss-mask: the checkpoint differs"
expect_ok "with the mask" $B/train "${margs[@]:0:${#margs[@]}-1}" --out "$tmp/masked.ckpt"
cmp -s "$tmp/mfull.ckpt" "$tmp/masked.ckpt" && bad "the mask changed nothing: the check above proves nothing" || ok

# The same corpus elsewhere resumes (its hash is the same); the corpus the
# checkpoint names, changed since, is refused naming both hashes, and the
# checkpoint is left as it was; another corpus given with --data is a choice.
cp -r "$tmp/c" "$tmp/copy"
cp "$tmp/half11.ckpt" "$tmp/moved.ckpt"
expect_ok "--resume with the corpus copied elsewhere" $B/train --resume "$tmp/moved.ckpt" --data "$tmp/copy"
# the same weights and moments as the uninterrupted run's; the header names the copy
tensors() { /usr/bin/python3 -c 'import struct,sys; raw = open(sys.argv[1], "rb").read(); sys.stdout.buffer.write(raw[8 + struct.unpack("<Q", raw[:8])[0]:])' "$1"; }
cmp -s <(tensors "$tmp/full.ckpt") <(tensors "$tmp/moved.ckpt") && header_train "$tmp/moved.ckpt" | grep -q "\"data\":\"$real/copy\"" &&
    ok || bad "the corpus copied elsewhere: not the uninterrupted run's tensors, or the copy not named"
for i in $(seq 1 60); do echo "Other lines $i: the whale is not in this corpus at all."; done >"$tmp/c.txt"
rm -rf "$tmp/c"
expect_ok "the corpus changed in place" $B/prepare --input "$tmp/c.txt" --out "$tmp/c" --tokenizer-from "$tmp/a"
cp "$tmp/half11.ckpt" "$tmp/changed.ckpt"
expect_error "--resume after the corpus changed" "^train: error: '.*changed.ckpt': its data '.*/c' has changed since \(data hash [0-9a-f]{16}, it was [0-9a-f]{16}\)" \
    $B/train --resume "$tmp/changed.ckpt"
cmp -s "$tmp/half11.ckpt" "$tmp/changed.ckpt" && ok || bad "a refused resume changed its checkpoint"
expect_error "--resume with --data naming the changed corpus" "its data '.*/c' has changed since" \
    $B/train --resume "$tmp/changed.ckpt" --data "$tmp/c" --out "$tmp/other.ckpt"
[ ! -e "$tmp/other.ckpt" ] && ok || bad "a refused resume wrote its --out"
cp -r "$tmp/c" "$tmp/stage2"
expect_ok "--resume with --data of another corpus" $B/train --resume "$tmp/changed.ckpt" --data "$tmp/stage2" --out "$tmp/stage2.ckpt"
grep -q "steps 11..24 of 24" "$tmp/out" && header_train "$tmp/stage2.ckpt" | grep -q "\"data\":\"$real/stage2\"" && ok ||
    bad "--resume onto another corpus given with --data: $(grep '^train:' "$tmp/out"), $(header_train "$tmp/stage2.ckpt")"

# A checkpoint that names no data (one written before bin/train kept it) asks for --data.
train_json=$(header_train "$tmp/half11.ckpt" | /usr/bin/python3 -c 'import json,sys
t = json.load(sys.stdin); t.pop("data"); t.pop("data_hash"); print(json.dumps(t, separators=(",", ":")))')
/usr/bin/python3 -m tests.tools.ckpt_forge "meta:train=$train_json" "$tmp/half11.ckpt" "$tmp/old.ckpt"
expect_error "--resume alone, no data named" "--data DIR is required: '.*old.ckpt' does not name the data it was trained on" \
    $B/train --resume "$tmp/old.ckpt"
expect_ok "--resume with --data, no data named" $B/train --resume "$tmp/old.ckpt" --data "$tmp/copy"
grep -q "steps 11..24 of 24" "$tmp/out" && ok || bad "an old checkpoint with --data did not continue: $(grep '^train:' "$tmp/out")"

# Ctrl-C: the line it prints is a command that continues the run and its log.
(cd "$tmp/elsewhere" && exec $B/train --data ../copy --out int.ckpt --log int.csv "${SMALL[@]}" --max-iters 1000000 \
    --eval-interval 0 >"$tmp/int.out" 2>&1) &
pid=$!
for _ in $(seq 1 100); do grep -q "^step" "$tmp/int.out" && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
line=$(grep "^interrupted:" "$tmp/int.out")
[ $rc -eq 130 ] && [[ $line == *"(continue with --resume int.ckpt --log int.csv)" ]] && ok || bad "Ctrl-C: exit $rc, '$line'"
at=$(sed -n 's/^interrupted: checkpoint at step \([0-9]*\).*/\1/p' "$tmp/int.out")
rows=$(wc -l <"$tmp/elsewhere/int.csv")
cont=$(sed -n 's/.*(continue with \(.*\))$/\1/p' <<<"$line")
# shellcheck disable=SC2086 # the printed words, as a person would paste them
(cd "$tmp/elsewhere" && $B/train $cont --stop-at $((at + 3)) >"$tmp/out" 2>"$tmp/err") && ok || bad "the printed command: $(cat "$tmp/err")"
grep -q "steps $at\.\.$((at + 3)) of 1000000" "$tmp/out" && ok || bad "the printed command did not continue at step $at: $(grep '^train:' "$tmp/out")"
[ "$(wc -l <"$tmp/elsewhere/int.csv")" -eq $((rows + 3)) ] && [ "$(tail -1 "$tmp/elsewhere/int.csv" | cut -d, -f1)" = $((at + 3)) ] &&
    ok || bad "the log did not continue: $(tail -2 "$tmp/elsewhere/int.csv")"

# elapsed_s goes on across the resume: the first resumed row's is not below the last interrupted one's.
/usr/bin/python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = [float(r["elapsed_s"]) for r in rows]
sys.exit(0 if all(b >= a for a, b in zip(t, t[1:])) else 1)' "$tmp/elsewhere/int.csv" && ok ||
    bad "elapsed_s restarted after the resume: $(cut -d, -f1,9 "$tmp/elsewhere/int.csv" | tail -5 | tr '\n' ' ')"

# A run folder: --run DIR holds the checkpoint, the best one, the logs and
# config.json; stopped at 11 and continued with --resume DIR alone, it ends
# byte for byte as the uninterrupted run (its checkpoint, best.ckpt, and the
# logs but for their timings), and the numbered checkpoints are kept on request.
rargs=(--data "$tmp/copy" "${SMALL[@]}" --max-iters 24 --eval-interval 8 --dropout 0.1 --warmup-iters 5 --ckpt-interval 8
       --keep-checkpoints 1)
expect_ok "run folder, uninterrupted" $B/train "${rargs[@]}" --run "$tmp/runs/full"
expect_ok "run folder, stopped at 11" $B/train "${rargs[@]}" --run "$tmp/runs/half" --stop-at 11
(cd "$tmp/elsewhere" && $B/train --resume ../runs/half >"$tmp/out" 2>"$tmp/err") && ok || bad "--resume DIR: $(cat "$tmp/err")"
grep -q "steps 11..24 of 24" "$tmp/out" && ok || bad "--resume DIR did not continue at step 11: $(grep '^train:' "$tmp/out")"
for f in ckpt best.ckpt step-000008.ckpt step-000016.ckpt step-000024.ckpt; do  # the last step an interval's too
    cmp -s "$tmp/runs/full/$f" "$tmp/runs/half/$f" && ok || bad "--resume DIR: $f differs from the uninterrupted run's"
done
for f in log.csv log.jsonl; do  # step, tokens, losses, lr, grad norm: all but the timings
    cmp -s <(cut -d, -f1-7 "$tmp/runs/full/$f") <(cut -d, -f1-7 "$tmp/runs/half/$f") && ok ||
        bad "--resume DIR: $f differs from the uninterrupted run's"
done
[ "$(ls "$tmp/runs/full")" = "$(printf '%s\n' best.ckpt ckpt config.json log.csv log.jsonl step-000008.ckpt step-000016.ckpt step-000024.ckpt)" ] &&
    ok || bad "the run folder holds $(ls "$tmp/runs/full" | tr '\n' ' ')"
expect_error "--run on a folder holding a run" "holds a run already: continue it with --resume" \
    $B/train "${rargs[@]}" --run "$tmp/runs/full"
expect_error "--run with --out" "a run folder keeps its own checkpoint and log" $B/train "${rargs[@]}" --run "$tmp/runs/x" --out "$tmp/x.ckpt"
cmp -s "$tmp/runs/full/ckpt" "$tmp/runs/half/ckpt" && ok || bad "a refused run changed a run folder's checkpoint"
# Ctrl-C in a run folder prints --resume DIR, which goes on.
(exec $B/train --data "$tmp/copy" "${SMALL[@]}" --max-iters 1000000 --eval-interval 0 --run "$tmp/runs/int" >"$tmp/rint.out" 2>&1) &
pid=$!
for _ in $(seq 1 100); do grep -q "^step" "$tmp/rint.out" && break; sleep 0.1; done
kill -INT $pid
wait $pid
line=$(grep "^interrupted:" "$tmp/rint.out")
[[ $line == *"(continue with --resume $tmp/runs/int)" ]] && ok || bad "Ctrl-C in a run folder: '$line'"
at=$(sed -n 's/^interrupted: checkpoint at step \([0-9]*\).*/\1/p' "$tmp/rint.out")
expect_ok "--resume DIR after Ctrl-C" $B/train --resume "$tmp/runs/int" --stop-at $((at + 2))
grep -q "steps $at\.\.$((at + 2)) of 1000000" "$tmp/out" && ok || bad "--resume DIR after Ctrl-C: $(grep '^train:' "$tmp/out")"

# Experiment files: --print-config's file read back with --config is the same
# run, byte for byte (checkpoint and log); options given win over the file's;
# an unknown key is refused naming it, with a suggestion; a bad value as on
# the command line. A run folder's config.json is that file too.
cargs=(--data "$tmp/copy" "${SMALL[@]}" --max-iters 12 --eval-interval 4 --lr 2e-3 --warmup-iters 3 --recipe modern)
expect_ok "--print-config" $B/train "${cargs[@]}" --out "$tmp/cfg1.ckpt" --log "$tmp/cfg1.csv" --print-config
cp "$tmp/out" "$tmp/exp.json"
[ ! -e "$tmp/cfg1.ckpt" ] && grep -q '"lr": 0.002,' "$tmp/exp.json" && ok || bad "--print-config ran, or its file lacks lr: $(head -c 300 "$tmp/exp.json")"
expect_ok "the command line" $B/train "${cargs[@]}" --out "$tmp/cfg1.ckpt" --log "$tmp/cfg1.csv"
expect_ok "the same from --config" $B/train --config "$tmp/exp.json" --out "$tmp/cfg2.ckpt" --log "$tmp/cfg2.csv"
cmp -s "$tmp/cfg1.ckpt" "$tmp/cfg2.ckpt" && cmp -s <(cut -d, -f1-7 "$tmp/cfg1.csv") <(cut -d, -f1-7 "$tmp/cfg2.csv") && ok ||
    bad "--config of --print-config's file: not the same run"
expect_ok "--config, an option given wins" $B/train --config "$tmp/exp.json" --out "$tmp/cfg3.ckpt" --max-iters 5 --stop-at 2
grep -q "steps 0..2 of 5" "$tmp/out" && ok || bad "an option given did not win over --config: $(grep '^train:' "$tmp/out")"
echo '{"max-iters": 5, "mixr": "attention"}' >"$tmp/typo.json"
expect_error "--config, unknown key" "typo.json': unknown option 'mixr': did you mean --mixer\?" $B/train --config "$tmp/typo.json"
echo '{"config": "other.json"}' >"$tmp/nested.json"
expect_error "--config naming another" "nested.json': an experiment file names no other" $B/train --config "$tmp/nested.json"
echo '{"lr": "fast"}' >"$tmp/badlr.json"
expect_error "--config, bad value" "^train: error: --lr: 'fast' is not a number" $B/train --config "$tmp/badlr.json"
expect_ok "--config of a run folder's config.json" $B/train --config "$tmp/runs/full/config.json" --run "$tmp/runs/again"
cmp -s "$tmp/runs/full/ckpt" "$tmp/runs/again/ckpt" && ok || bad "config.json read back: not the same run"

# bin/info reads a run folder and a checkpoint back; --list shows one line per run, sorted.
expect_ok "bin/info DIR" $B/info "$tmp/runs/half"
grep -q "^step: *24 of 24 | 1536 tokens seen" "$tmp/out" && grep -q "^val loss: *last [0-9.]*, best [0-9.]* at step [0-9]* (best.ckpt)" "$tmp/out" &&
    grep -q "^data: *$real/copy (hash [0-9a-f]\{16\})" "$tmp/out" && grep -q "^tokenizer: *char" "$tmp/out" && ok ||
    bad "bin/info DIR: $(cat "$tmp/out")"
expect_ok "bin/info CKPT --json" $B/info "$tmp/full.ckpt" --json
/usr/bin/python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
assert j["step"] == 24 and j["tokens"] == 24 * 64 and j["val_loss"] > 0 and j["options"]["max-iters"] == 24, j
assert j["data_hash"] if "data_hash" in j else j["options"]["data_hash"]' "$tmp/out" && ok || bad "bin/info --json: $(head -c 400 "$tmp/out")"
cp -r "$tmp/runs/int" "$tmp/runs/zz"  # a run that stopped early: its val loss is worse
expect_ok "bin/info --list" $B/info --list "$tmp/runs" --sort name
[ "$(awk 'NR > 2 {print $1}' "$tmp/out" | tr '\n' ' ')" = "again full half int zz " ] && ok || bad "bin/info --list --sort name: $(cat "$tmp/out")"
expect_ok "bin/info --list --sort step" $B/info --list "$tmp/runs" --sort step
awk 'NR > 2 {split($2, s, "/"); print s[1]}' "$tmp/out" | sort -c -n -r && ok || bad "bin/info --list --sort step: $(cat "$tmp/out")"
expect_error "bin/info of no run" "is not a run folder: it holds no ckpt" $B/info "$tmp/elsewhere"

echo "resume_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
