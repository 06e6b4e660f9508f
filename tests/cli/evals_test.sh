#!/usr/bin/env bash
# bin/eval's downstream tasks (--pairs, --cloze, --choice) on small files in
# BLiMP's, LAMBADA's and HellaSwag's formats (generated here, never the real
# sets), with a tiny char model and a tiny BPE model trained on one repeated
# line: known answers (counts whose Wilson intervals are Newcombe's published
# ones), accuracies recomputed by hand from the log-probabilities bin/eval
# prints, those log-probabilities against bin/eval --text's, the same scores
# at any batch size, and every hostile file one line and exit 2.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok
export OMP_NUM_THREADS=1 # tiny models: one thread is fastest, and waits on none when the machine is busy

LINE="the cat sat on the mat. the dog ran to the log."
for i in $(seq 1 150); do echo "$LINE"; done >"$tmp/t.txt"
TINY=(--n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 8 --lr 3e-3 --eval-iters 2 --log-interval 100)
expect_ok "prepare char" $B/prepare --input "$tmp/t.txt" --out "$tmp/char"
expect_ok "train char" $B/train --data "$tmp/char" --out "$tmp/char.ckpt" "${TINY[@]}" --max-iters 250
expect_ok "prepare bpe" $B/prepare --input "$tmp/t.txt" --out "$tmp/bpe" --tokenizer bpe --vocab-size 270 \
    --doc-separator '<|endoftext|>'
expect_ok "train bpe" $B/train --data "$tmp/bpe" --out "$tmp/bpe.ckpt" "${TINY[@]}" --max-iters 150

# The task files. Pairs: N_RIGHT with the trained sentence good and a scramble
# bad, N_WRONG the other way round, and one longer than the block (skipped).
# Cloze: two passages whose last word the line fixes, one whose last word it
# never saw (all three cut to the block), one short. Choice: the right ending
# labelled in two, a wrong one in the third, one with no context.
make_tasks() { # DIR N_RIGHT N_WRONG
    /usr/bin/python3 - "$@" <<'PY'
import json, sys
d, right, wrong = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
good, bad = "the cat sat on the mat.", "the mat sat on the cat."
with open(f"{d}/pairs.jsonl", "w") as f:
    for i in range(right + wrong):
        g, b = (good, bad) if i < right else (bad, good)
        f.write(json.dumps({"sentence_good": g, "sentence_bad": b, "field": "syntax" if i % 2 else "semantics",
                            "linguistics_term": "order", "UID": f"uid_{i % 3}", "pairID": str(i)}) + "\n")
    f.write(json.dumps({"sentence_good": " ".join([good] * 6), "sentence_bad": " ".join([bad] * 6), "field": "syntax",
                        "linguistics_term": "order", "UID": "long"}) + "\n")
with open(f"{d}/cloze.txt", "w") as f:
    f.write("the cat sat on the mat. the dog ran to the log\n"
            "the dog ran to the log. the cat sat on the mat\n"
            "the cat sat on the mat. the dog ran to the zebra\n"
            "the dog ran to the log\n")
items = [("the cat sat on the", ["mat.", "log.", "zebra."], 0, "cats"),
         ("the dog ran to the", ["cat.", "log."], 1, "dogs"),
         ("the dog ran to the", ["mat.", "log.", "cat."], 0, "dogs"),
         ("", ["the cat sat.", "xq zv qq."], "0", "cats")]
with open(f"{d}/choice.jsonl", "w") as f:
    for ctx, endings, label, act in items:
        f.write(json.dumps({"ind": 1, "activity_label": act, "ctx": ctx, "endings": endings, "label": label}) + "\n")
PY
}
mkdir -p "$tmp/k1" "$tmp/k2"
make_tasks "$tmp/k1" 81 182
make_tasks "$tmp/k2" 15 133

# Recomputes each task's accuracies, categories and perplexity from the
# items' log-probabilities, checks each interval is Wilson's (its bounds
# solve n (p - b)^2 = z^2 b (1 - b)), and the known answers given as
# TASK.KEY=VALUE (4 decimals).
check_json() { # FILE NAME TASK.KEY=VALUE...
    /usr/bin/python3 - "$@" <<'PY'
import json, math, sys
path, name, known = sys.argv[1], sys.argv[2], sys.argv[3:]
d = json.load(open(path))
z = 1.959963984540054
def wilson_ok(correct, n, iv):
    """The bounds are where the score test's |p - b| = z sqrt(b (1 - b) / n):
    the roots of (n + z^2) b^2 - (2 c + z^2) b + c^2 / n = 0."""
    if n == 0:
        return iv == [None, None]
    a, b, c = n + z * z, -(2 * correct + z * z), correct * correct / n
    r = math.sqrt(b * b - 4 * a * c)
    return abs(iv[0] - (-b - r) / (2 * a)) < 2e-6 and abs(iv[1] - (-b + r) / (2 * a)) < 2e-6
def check(cond, what):
    if not cond:
        sys.exit(f"{name}: {what}")
for task in ("pairs", "cloze", "choice"):
    if task not in d:
        continue
    t = d[task]
    scored = [it for it in t["per_item"] if it["scored"]]
    check(t["scored"] == len(scored) and t["items"] == len(t["per_item"]), f"{task} counts")
    check(t["skipped"] == t["items"] - len(scored), f"{task} skipped")
    if task == "pairs":
        right = [it["logprob"][0] > it["logprob"][1] for it in scored]
    elif task == "cloze":
        right = [it["correct"] for it in scored]
        nats = -sum(it["logprob"][0] for it in scored) / len(scored)
        check(abs(t["perplexity"] - math.exp(nats)) <= 1e-5 * math.exp(nats), f"cloze perplexity {t['perplexity']}")
    else:
        label = [int(x["label"]) for x in map(json.loads, open(d[task]["file"]))]
        right, norm = [], []
        for it in scored:
            y = label[it["line"] - 1]
            lp, by = it["logprob"], it["bytes"]
            right.append(all(lp[y] > v for c, v in enumerate(lp) if c != y))
            norm.append(all(lp[y] / by[y] > v / by[c] for c, v in enumerate(lp) if c != y))
            check(it["correct_norm"] == norm[-1], f"choice line {it['line']} correct_norm")
        check(t["correct_norm"] == sum(norm) and abs(t["accuracy_norm"] - sum(norm) / len(norm)) < 1e-6, "acc_norm")
        check(wilson_ok(t["correct_norm"], t["scored"], t["interval_norm"]), f"interval_norm {t['interval_norm']}")
    check([it["correct"] for it in scored] == right, f"{task} items' verdicts")
    check(t["correct"] == sum(right) and abs(t["accuracy"] - sum(right) / len(right)) < 1e-6,
          f"{task} accuracy {t['accuracy']} against {sum(right)}/{len(right)}")
    check(wilson_ok(t["correct"], t["scored"], t["interval"]), f"{task} interval {t['interval']}")
    rows = [json.loads(x) for x in open(t["file"])] if task != "cloze" else []
    for key, cats in t["by"].items():
        want = {}
        for it in scored:
            name = rows[it["line"] - 1].get(key)
            if name is not None:
                n, c = want.get(name, (0, 0))
                want[name] = (n + 1, c + it["correct"])
        check([c["name"] for c in cats] == sorted(want), f"{task} {key} names {[c['name'] for c in cats]}")
        for c in cats:
            check((c["scored"], c["correct"]) == want[c["name"]], f"{task} {key} {c['name']} counts")
            check(wilson_ok(c["correct"], c["scored"], c["interval"]), f"{task} {key} {c['name']} interval")
for k in known:
    lhs, want = k.split("=")
    task, key = lhs.split(".", 1)
    v = d[task]
    for part in key.split("."):
        v = v[int(part)] if isinstance(v, list) else v[part]
    ok = v == want if isinstance(v, str) else abs(float(v) - float(want)) <= 5e-5
    check(ok, f"{lhs} is {v!r}, wanted {want}")
PY
}

for tok in char bpe; do
    expect_ok "$tok tasks json" $B/eval --model "$tmp/$tok.ckpt" --pairs "$tmp/k1/pairs.jsonl" --cloze "$tmp/k1/cloze.txt" \
        --choice "$tmp/k1/choice.jsonl" --json --items
    cp "$tmp/out" "$tmp/$tok.json"
    # 81 of 263 right: Newcombe (1998)'s Table I gives Wilson's 0.2553-0.3662.
    if check_json "$tmp/$tok.json" "$tok" pairs.scored=263 pairs.correct=81 pairs.interval.0=0.2553 \
        pairs.interval.1=0.3662 pairs.skipped=1 cloze.scored=4 cloze.correct=3 choice.scored=4 choice.correct=3 \
        choice.correct_norm=3 pairs.by.field.0.name=semantics pairs.by.field.0.scored=132; then ok
    else bad "$tok: the report disagrees with its items (above)"; fi
done
if grep -q '"start":"\\n"' "$tmp/char.json" && grep -q '"start":"<|endoftext|>"' "$tmp/bpe.json"; then ok
else bad "start token: a newline for the char model, <|endoftext|> for the BPE one"; fi
# Cut contexts: the three long passages for the char model (block 32), none when none is longer.
if check_json "$tmp/char.json" "char truncation" cloze.truncated=3 pairs.truncated=0; then ok; else bad "char truncation count"; fi

# 15 of 148: Newcombe's 0.0624-0.1605, in text as in JSON.
expect_ok "char pairs 15/148" $B/eval --model "$tmp/char.ckpt" --pairs "$tmp/k2/pairs.jsonl"
if grep -q "^accuracy 0.1014 (95% Wilson interval 0.0624-0.1605): 15 of 148 pairs" "$tmp/out" &&
   grep -q "^skipped 1 item: a sentence has more tokens than the model's block" "$tmp/out" &&
   grep -qE "^  semantics +0\.1081 +0\.[0-9]{4}-0\.[0-9]{4} +8/74$" "$tmp/out"; then ok
else bad "char pairs 15/148 text report: $(head -c 600 "$tmp/out")"; fi

# The log-probabilities are bin/eval --text's sums over the same tokens
# (after a newline), and the same at any batch size (no padding with one row).
printf '\nthe mat sat on the cat.' >"$tmp/bad.txt"
expect_ok "text of the bad sentence" $B/eval --model "$tmp/char.ckpt" --text "$tmp/bad.txt" --json
cp "$tmp/out" "$tmp/text.json"
expect_ok "batch 1" $B/eval --model "$tmp/char.ckpt" --pairs "$tmp/k1/pairs.jsonl" --choice "$tmp/k1/choice.jsonl" \
    --cloze "$tmp/k1/cloze.txt" --json --items --batch-size 1
if /usr/bin/python3 - "$tmp/char.json" "$tmp/out" "$tmp/text.json" <<'PY'
import json, sys
a, b, text = (json.load(open(p)) for p in sys.argv[1:])
bad_lp = -text["loss"] * text["scored"]
assert text["scored"] == 23, text
assert abs(a["pairs"]["per_item"][0]["logprob"][1] - bad_lp) < 2e-4, (a["pairs"]["per_item"][0], bad_lp)
for task in ("pairs", "cloze", "choice"):
    for x, y in zip(a[task]["per_item"], b[task]["per_item"]):
        assert x["scored"] == y["scored"] and all(abs(u - v) < 2e-4 for u, v in zip(x.get("logprob", []), y.get("logprob", []))), (x, y)
PY
then ok; else bad "log-probabilities against --text, or at batch size 1"; fi

# --ablate scores the model without that part, and says so.
expect_ok "ablated" $B/eval --model "$tmp/char.ckpt" --pairs "$tmp/k1/pairs.jsonl" --ablate 0:head0 --json --items
if /usr/bin/python3 - "$tmp/char.json" "$tmp/out" <<'PY'
import json, sys
whole, ablated = (json.load(open(p)) for p in sys.argv[1:])
assert ablated["ablated"] == "0:head0" and "ablated" not in whole
assert whole["pairs"]["per_item"][0]["logprob"] != ablated["pairs"]["per_item"][0]["logprob"]
PY
then ok; else bad "--ablate with --pairs"; fi

# Nothing that fits the block: reported as such (null in JSON), not an error.
tail -n 1 "$tmp/k1/pairs.jsonl" >"$tmp/long.jsonl"
expect_ok "only a long pair" $B/eval --model "$tmp/char.ckpt" --pairs "$tmp/long.jsonl" --json
if grep -q '"scored":0,"correct":0,"accuracy":null,"interval":\[null,null\],"skipped":1' "$tmp/out"; then ok
else bad "only a long pair: $(head -c 300 "$tmp/out")"; fi
expect_ok "only a long pair, text" $B/eval --model "$tmp/char.ckpt" --pairs "$tmp/long.jsonl"
if grep -q "^accuracy: none of the items could be scored" "$tmp/out"; then ok; else bad "only a long pair: $(cat "$tmp/out")"; fi
# A char model that never saw a newline has no start token to score after.
printf 'the cat sat on the mat. %.0s' $(seq 1 40) >"$tmp/flat.txt"
expect_ok "prepare flat" $B/prepare --input "$tmp/flat.txt" --out "$tmp/flat"
expect_ok "train flat" $B/train --data "$tmp/flat" --out "$tmp/flat.ckpt" "${TINY[@]}" --block-size 8 --max-iters 1
expect_error "no start token" "neither <\|endoftext\|> nor a newline" $B/eval --model "$tmp/flat.ckpt" --pairs "$tmp/k1/pairs.jsonl"

# Hostile files: one line naming the file (and the line), exit 2.
h=$tmp/h
mkdir -p "$h"
P=(--model "$tmp/char.ckpt")
: >"$h/empty.jsonl"
expect_error "empty file" "--pairs '.*empty.jsonl' is empty" $B/eval "${P[@]}" --pairs "$h/empty.jsonl"
printf '{"sentence_good":"a b","sentence_bad":"b a"}\n{"sentence_good":"a b"}\n' >"$h/f"
expect_error "missing key" "'.*/f' line 2: no \"sentence_bad\"" $B/eval "${P[@]}" --pairs "$h/f"
printf '{"sentence_good":"a b","sentence_bad":["b a"]}\n' >"$h/f"
expect_error "wrong type" "line 1: \"sentence_bad\" is not a string" $B/eval "${P[@]}" --pairs "$h/f"
printf '{"sentence_good":"a b","sentence_bad":"b a","UID":7}\n' >"$h/f"
expect_error "category not a string" "line 1: \"UID\" is not a string" $B/eval "${P[@]}" --pairs "$h/f"
printf '{"sentence_good":"a b","sentence_bad":"b a"}\n{"sentence_good": oops}\n' >"$h/f"
expect_error "bad JSON line" "--pairs '.*/f' line 2: invalid JSON" $B/eval "${P[@]}" --pairs "$h/f"
printf '["a","b"]\n' >"$h/f"
expect_error "not an object" "line 1: not a JSON object" $B/eval "${P[@]}" --pairs "$h/f"
printf '{"ctx":"a","endings":["b","c"],"label":2}\n' >"$h/f"
expect_error "label out of range" "--choice '.*/f' line 1: \"label\" 2 is not one of the 2 endings" $B/eval "${P[@]}" --choice "$h/f"
printf '{"ctx":"a","endings":["b","c"],"label":1.0}\n' >"$h/f"
expect_error "label not an integer" "line 1: \"label\" is not an integer" $B/eval "${P[@]}" --choice "$h/f"
printf '{"ctx":"a","endings":["b","c"]}\n' >"$h/f"
expect_error "unlabelled" "line 1: no \"label\"" $B/eval "${P[@]}" --choice "$h/f"
printf '{"ctx":"a","endings":["b",""],"label":0}\n' >"$h/f"
expect_error "empty ending" "line 1: \"endings\"\[1\] is empty" $B/eval "${P[@]}" --choice "$h/f"
printf '{"ctx":"a","endings":["b"],"label":0}\n' >"$h/f"
expect_error "one ending" "line 1: \"endings\" has 1 entry" $B/eval "${P[@]}" --choice "$h/f"
printf 'the cat sat\n\xc3\x28 the dog ran\n' >"$h/f"
expect_error "invalid UTF-8" "--cloze '.*/f' line 2: not UTF-8" $B/eval "${P[@]}" --cloze "$h/f"
printf 'the cat\0 sat\n' >"$h/f"
expect_error "NUL byte" "line 1: holds a NUL byte" $B/eval "${P[@]}" --cloze "$h/f"
printf 'the cat sat\n\nthe dog ran\n' >"$h/f"
expect_error "blank line" "line 2: empty" $B/eval "${P[@]}" --cloze "$h/f"
printf 'the cat sat\nalone\n' >"$h/f"
expect_error "one word" "line 2: a passage needs words before its last word" $B/eval "${P[@]}" --cloze "$h/f"
{ printf 'the cat sat\nthe '; head -c 70000 /dev/zero | tr '\0' x; printf ' cat\n'; } >"$h/f"
expect_error "over-long line" "line 2: longer than 65536 bytes" $B/eval "${P[@]}" --cloze "$h/f"
truncate -s 300M "$h/huge"
expect_error "huge file" "--cloze '.*huge' is 314572800 bytes: more than the 256 MiB" $B/eval "${P[@]}" --cloze "$h/huge"
rm -f "$h/huge"
mkfifo "$h/fifo"
expect_error "FIFO" "--cloze: '.*fifo' is not a regular file" timeout 60 $B/eval "${P[@]}" --cloze "$h/fifo"
expect_error "missing file" "--choice: cannot open" $B/eval "${P[@]}" --choice "$h/none.jsonl"
expect_error "with --text" "instead of --data and --text" $B/eval "${P[@]}" --cloze "$tmp/k1/cloze.txt" --text "$tmp/t.txt"
expect_error "with --stride" "are for --data and --text" $B/eval "${P[@]}" --cloze "$tmp/k1/cloze.txt" --stride 4
expect_error "--items alone" "--items is for" $B/eval "${P[@]}" --text "$tmp/t.txt" --items

echo "evals: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
