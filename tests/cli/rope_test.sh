#!/usr/bin/env bash
# --pos rope from outside: bin/train accepts it and records it in the
# checkpoint, refuses an odd head size in one line (exit 2), resume keeps
# rope (and refuses another --pos); eval, sample and inspect read the model.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok

for i in $(seq 1 60); do echo "The whale, the whale! Line $i of a small corpus for tests; it repeats."; done >"$tmp/a.txt"
expect_ok "prepare" $B/prepare --input "$tmp/a.txt" --out "$tmp/a"
SMALL=(--n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 2 --log-interval 5)

expect_ok "train rope" $B/train --data "$tmp/a" --out "$tmp/r.ckpt" "${SMALL[@]}" --max-iters 10 --pos rope
grep -q "| pos rope" "$tmp/out" && ok || bad "train does not report pos rope: $(grep '^model:' "$tmp/out")"
grep -aqF '\"pos\":\"rope\"' "$tmp/r.ckpt" && ok || bad "the checkpoint's config does not say rope"
expect_ok "train rope hybrid" $B/train --data "$tmp/a" --out "$tmp/h.ckpt" "${SMALL[@]}" --max-iters 4 --pos rope \
    --mixer attention,grassmann --grassmann-windows 1,2,4

expect_error "odd head size" "head size .*must be even" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" \
    --n-layer 1 --n-head 2 --n-embd 18 --block-size 16 --pos rope
[ ! -e "$tmp/o.ckpt" ] && ok || bad "a refused rope run left a checkpoint behind"

expect_ok "resume rope" $B/train --data "$tmp/a" --out "$tmp/r2.ckpt" "${SMALL[@]}" --max-iters 14 --resume "$tmp/r.ckpt"
grep -q "| pos rope" "$tmp/out" && ok || bad "resume lost rope: $(grep '^model:' "$tmp/out")"
grep -q "steps 10..14 of 14" "$tmp/out" && ok || bad "resume did not continue at step 10: $(grep '^train:' "$tmp/out")"
expect_error "resume pos change" "--pos learned differs from the checkpoint's rope" $B/train --data "$tmp/a" \
    --out "$tmp/r3.ckpt" --resume "$tmp/r.ckpt" --pos learned

expect_ok "eval rope" $B/eval --model "$tmp/r2.ckpt" --data "$tmp/a" --json
grep -q '"loss"' "$tmp/out" && ok || bad "eval printed no loss: $(head -c 300 "$tmp/out")"
expect_ok "sample rope" $B/sample --model "$tmp/h.ckpt" --prompt "The whale" --tokens 30 --temperature 0
expect_ok "inspect rope" $B/inspect --model "$tmp/r2.ckpt" --prompt "The whale, the" --out "$tmp/insp"
grep -q "(rope positions: the maps include the rotation, the form does not)" "$tmp/out" && ok \
    || bad "inspect does not say that its spectra ignore the rotation"

echo "rope tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
