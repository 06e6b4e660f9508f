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
cd "$(dirname "$0")/.."
. tests/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora
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
/usr/bin/python3 -m tests.ckpt_forge "meta:train=$train_json" "$tmp/half11.ckpt" "$tmp/old.ckpt"
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

echo "resume_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
