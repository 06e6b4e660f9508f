#!/usr/bin/env bash
# bin/inspect from the outside: it runs on tiny trained models of every
# mixer and writes what it promises; bad input gives exit status 2 and one
# line on stderr.
set -u
cd "$(dirname "$0")/../.."
source tests/cli/cli_lib.sh

for i in $(seq 1 40); do echo "The whale, the whale! Line $i of a small corpus."; done >"$tmp/a.txt"
expect_ok "prepare" $B/prepare --input "$tmp/a.txt" --out "$tmp/a"
SMALL=(--n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 1 --log-interval 5 --max-iters 5)
expect_ok "train attention" $B/train --data "$tmp/a" --out "$tmp/a.ckpt" "${SMALL[@]}"
expect_ok "train hybrid" $B/train --data "$tmp/a" --out "$tmp/g.ckpt" "${SMALL[@]}" --n-layer 3 --mixer attention,grassmann,gla \
    --grassmann-rank 6 --grassmann-windows 1,2,4

if $B/inspect --help | grep -q "usage: bin/inspect"; then ok; else bad "inspect --help"; fi

# Runs, and writes every file into a directory it creates.
expect_ok "inspect attention" $B/inspect --model "$tmp/a.ckpt" --prompt "The whale, the" --out "$tmp/o/a"
for f in attn_L0_H0.png attn_L0_H1.png attn_L1_H1.png attn_L0.png attn_L1.png attribution.png lens.txt tokens.txt inspect.json inspect.html; do
    [ -s "$tmp/o/a/$f" ] && ok || bad "inspect attention: $f missing"
done
[ -e "$tmp/o/a/gates.png" ] && bad "inspect attention: gates.png without Grassmann layers" || ok
grep -q "^layer 1 attention: attn, attention weight" "$tmp/out" && grep -q "top heads (a uniform head scores 0\.[0-9]*): L" "$tmp/out" && ok || bad "inspect attention: summary: $(head -c 300 "$tmp/out")"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['layers'])==2 and len(d['tokens'])==14" \
    "$tmp/o/a/inspect.json" && ok || bad "inspect attention: inspect.json"
expect_ok "inspect hybrid" $B/inspect --model "$tmp/g.ckpt" --prompt "the whale" --out "$tmp/o/g" --induction-length 4
for f in gates.png offset_norms.png decay.png state_norm.png; do [ -s "$tmp/o/g/$f" ] && ok || bad "inspect hybrid: $f missing"; done
grep -q "^  gates: Grassmann gate .*; mean 0\.[0-9]" "$tmp/out" && grep -q "^  decay: each head's decay .*; means H0 0\.[0-9]*, H1 0\." "$tmp/out" \
    && grep -q "^  state_norm: " "$tmp/out" && ok || bad "inspect hybrid: summary: $(cat "$tmp/out")"
# gla's exhibits in the JSON: each head's decay in (0, 1) and its state's norm, along the prompt.
if /usr/bin/python3 - "$tmp/o/g/inspect.json" <<'PY'; then ok; else bad "inspect hybrid: gla's exhibits in inspect.json"; fi
import json, sys
d = json.load(open(sys.argv[1]))
T = len(d["tokens"])
gla = d["layers"][2]
assert gla["mixer"] == "gla", gla["mixer"]
ex = {e["name"]: e for e in gla["exhibits"]}
assert ex["decay"]["kind"] == "series" and ex["decay"]["rows"] == ["H0", "H1"] and ex["decay"]["scale"] == [0, 1], ex["decay"]
assert all(len(r) == T and all(0 < v < 1 for v in r) for r in ex["decay"]["values"])
assert ex["state_norm"]["kind"] == "series" and all(len(r) == T and all(v > 0 for v in r) for r in ex["state_norm"]["values"])
gr = {e["name"]: e for e in d["layers"][1]["exhibits"]}
assert gr["offset_norms"]["rows"] == ["d=1", "d=2", "d=4"] and gr["plucker_residual"]["kind"] == "scalar", gr
assert gr["offset_norms"]["values"][2][:4] == [None] * 4  # offset 4 fits from position 4
PY
# Deterministic: the same files twice.
expect_ok "inspect again" $B/inspect --model "$tmp/g.ckpt" --prompt "the whale" --out "$tmp/o/g2" --induction-length 4
cmp -s "$tmp/o/g/inspect.json" "$tmp/o/g2/inspect.json" && cmp -s "$tmp/o/g/gates.png" "$tmp/o/g2/gates.png" \
    && cmp -s "$tmp/o/g/inspect.html" "$tmp/o/g2/inspect.html" && ok \
    || bad "inspect: two runs differ"
# The prompt from a file, through the model's tokenizer: the same inspection as given inline.
printf 'the whale' >"$tmp/prompt.txt"
expect_ok "inspect --prompt-file" $B/inspect --model "$tmp/g.ckpt" --prompt-file "$tmp/prompt.txt" --out "$tmp/o/g3" --induction-length 4
cmp -s "$tmp/o/g/inspect.json" "$tmp/o/g3/inspect.json" && ok || bad "inspect --prompt-file differs from --prompt"
expect_error "inspect --prompt and --prompt-file" "cannot be used together" \
    $B/inspect --model "$tmp/g.ckpt" --prompt x --prompt-file "$tmp/prompt.txt" --out "$tmp/o/g4"

# A byte-level model: a prompt that is not UTF-8 still gives valid JSON.
expect_ok "prepare byte" $B/prepare --input "$tmp/a.txt" --out "$tmp/abyte" --tokenizer byte
expect_ok "train byte" $B/train --data "$tmp/abyte" --out "$tmp/b.ckpt" "${SMALL[@]}"
expect_ok "inspect byte" $B/inspect --model "$tmp/b.ckpt" --prompt "$(printf 'a\xc3 wh')" --out "$tmp/o/b"
/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['prompt']=='a\ufffd wh', d['prompt']" \
    "$tmp/o/b/inspect.json" && ok || bad "inspect byte: inspect.json"
# The page's data is valid JSON too, with the half character's byte as its label.
/usr/bin/python3 -c "
import json, re, sys
html = open(sys.argv[1], encoding='utf-8').read()
d = json.loads(re.search(r'id=\"inspect-data\">(.*?)</script>', html, re.S).group(1))
assert '<0xC3>' in [t['label'] for t in d['tokens']], d['tokens']
assert 'http' not in html.replace('http-equiv', '').replace('http://www.w3.org/2000/svg', ''), 'a URL in the page'
" "$tmp/o/b/inspect.html" && ok || bad "inspect byte: inspect.html"

# A BPE model of 3 layers x 12 heads (more than the 32 the summary lists one
# by one): readable labels (the leading space as ␣ in the tables, _ in the
# pictures), every head in heads.png and heads.txt, a per-layer summary with
# the heads that stand out, and for a prompt past 128 tokens a JSON of each
# row's strongest keys instead of every map.
for i in $(seq 1 1500); do echo "The whale swam past the ship, and the sailors watched the whale $i times."; done >"$tmp/w.txt"
expect_ok "prepare bpe" $B/prepare --input "$tmp/w.txt" --out "$tmp/wb" --tokenizer bpe --vocab-size 320
expect_ok "train bpe" $B/train --data "$tmp/wb" --out "$tmp/wb.ckpt" --n-layer 3 --n-head 12 --n-embd 48 --block-size 256 \
    --batch-size 2 --eval-iters 1 --log-interval 5 --max-iters 5
long=$(for i in $(seq 1 20); do printf "The whale swam past the ship %d. " "$i"; done)
expect_ok "inspect bpe" $B/inspect --model "$tmp/wb.ckpt" --prompt "$long" --out "$tmp/o/wb" --induction-length 16 --induction-seqs 2
for f in heads.png heads.txt attn_L2_H11.png attn_L2.png; do [ -s "$tmp/o/wb/$f" ] && ok || bad "inspect bpe: $f missing"; done
grep -q "^maps: 36 heads; per layer" "$tmp/out" && grep -q "^most weight on the previous token: L" "$tmp/out" \
    && ! grep -q "^layer 0 attention" "$tmp/out" && ok || bad "inspect bpe: summary: $(head -c 400 "$tmp/out")"
# heads.txt: the maps' statistics and attention's three tables, a line per head each
[ "$(grep -c "^  H" "$tmp/o/wb/heads.txt")" -eq 144 ] && ok || bad "inspect bpe: heads.txt"
grep -q "$(printf '\t\xe2\x90\xa3')" "$tmp/o/wb/tokens.txt" && ok || bad "inspect bpe: no ␣ in tokens.txt"
if /usr/bin/python3 - "$tmp/o/wb/inspect.json" <<'PY'; then ok; else bad "inspect bpe: inspect.json"; fi
import json, sys
d = json.load(open(sys.argv[1]))
toks = d["tokens"]
assert len(toks) > 128 and d["maps"] == "top keys", (len(toks), d["maps"])
assert "".join(t["text"] for t in toks) == d["prompt"]
spaced = [t for t in toks if t["text"].startswith(" ")]
assert spaced and all(t["label"].startswith("\u2423") for t in spaced), spaced[:3]
maps = d["layers"][1]["exhibits"][0]
assert maps["kind"] == "maps" and "maps" not in maps and len(maps["maps_top"]) == 12 and len(maps["stats"]) == 12
head = maps["maps_top"][7]
assert len(head) == len(toks)
assert all(len(r) == min(i + 1, 3) and all(k <= i for k, _ in r) for i, r in enumerate(head))
PY
[ "$(du -k "$tmp/o/wb/inspect.json" | cut -f1)" -lt 4096 ] && ok || bad "inspect bpe: inspect.json over 4 MB"

# Bad input.
long=$(printf 'the whale %.0s' 1 2)
expect_error "prompt too long" "20 tokens, longer than the model's block size 16" $B/inspect --model "$tmp/a.ckpt" --prompt "$long" --out "$tmp/o/x"
expect_error "prompt outside vocabulary" "character 5 \('Z'\) is not in the model's vocabulary" $B/inspect --model "$tmp/a.ckpt" --prompt "The Zebra" --out "$tmp/o/x"
expect_error "prompt outside vocabulary (UTF-8)" "character 2 \('é'\)" $B/inspect --model "$tmp/a.ckpt" --prompt "Té" --out "$tmp/o/x"
expect_error "empty prompt" "empty" $B/inspect --model "$tmp/a.ckpt" --prompt "" --out "$tmp/o/x"
expect_error "no prompt" "--prompt is required" $B/inspect --model "$tmp/a.ckpt" --out "$tmp/o/x"
expect_error "no out" "--out is required" $B/inspect --model "$tmp/a.ckpt" --prompt "the"
expect_error "out is a file" "not a directory" $B/inspect --model "$tmp/a.ckpt" --prompt "the" --out "$tmp/a.txt/sub"
expect_error "text as model" "$tmp/a.txt" $B/inspect --model "$tmp/a.txt" --prompt "the" --out "$tmp/o/x"
expect_error "tokens as model" "train.bin" $B/inspect --model "$tmp/a/train.bin" --prompt "the" --out "$tmp/o/x"
expect_error "missing model" "cannot open|no such" $B/inspect --model "$tmp/nope.ckpt" --prompt "the" --out "$tmp/o/x"
expect_error "induction too long" "induction-length must be between 2 and block_size / 2 = 8" $B/inspect --model "$tmp/a.ckpt" --prompt "the" --out "$tmp/o/x" --induction-length 9
expect_error "unknown option" "unknown option" $B/inspect --model "$tmp/a.ckpt" --prompt "the" --out "$tmp/o/x" --bogus
[ -e "$tmp/o/x" ] && bad "a failed run created its output directory" || ok

echo "inspect: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
