#!/usr/bin/env bash
# harness/probe.py end to end at toy size (seconds): the staged MQAR curriculum
# (bin/train --stop-at on the easy data, then --resume on the full task), the
# rows of probe.json, the report, and one-line errors for bad options.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok

TOY=(--mqar-seq-lens 16 --pairs 4 --symbols 8 --mqar-iters 30 --copy-max-iters 10 --train-seqs 100 --val-seqs 10 --copy-seq-len 32
     --copy-gaps 4 --copy-segment 4 --grassmann-windows 1,2,4,8 --threads 1 --out "$tmp/p")
expect_ok "probe, staged" python3 -m harness.probe "${TOY[@]}" --curriculum-pairs 2 --curriculum-steps 20
# progress over the sweep as each run ends; the default warm-up (30) scaled to the 10-step copy runs, said once
grep -q "; 4 of 4 runs done, [0-9ms]* elapsed, done$" "$tmp/out" && [ "$(grep -c " runs done, " "$tmp/out")" = 4 ] && ok \
    || bad "probe: no 'k of 4 runs done' per run: $(grep '^probe:' "$tmp/out" | head -c 600)"
[ "$(grep -c "probe: --warmup-iters 30 exceeds the 10 steps of the copy runs: they warm up over 1" "$tmp/out")" = 1 ] \
    && ! grep -q "warning: --warmup-iters" "$tmp/err" && ok || bad "probe: the copy runs' warm-up not scaled once: $(head -c 400 "$tmp/err")"
if /usr/bin/python3 - "$tmp/p" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = json.load(open(os.path.join(out, "probe.json")))
# 2 architectures x (one MQAR length + one copy gap)
assert len(rows) == 4, rows
for r in rows:
    assert 0.0 <= r["accuracy"] <= 1.0 and r["answers"] > 0, r
    for k in ("arch", "task", "seq_len", "n_embd", "seed"):
        assert k in r, (k, r)
# --pos auto: rope for the pure Transformer, learned positions for the model with Grassmann layers
assert {r["arch"]: r["pos"] for r in rows} == {"attention": "rope", "grassmann": "learned"}, rows
mqar = [r for r in rows if r["task"] == "mqar"]
copy = [r for r in rows if r["task"] == "copy"]
assert all(r["curriculum"] == {"pairs": 2, "steps": 20} and r["pairs"] == 4 and r["steps"] == 30 for r in mqar), mqar
assert all(r["steps"] == 10 for r in copy), copy
assert all(r["curriculum"] is None and r["gap"] == 4 for r in copy), copy
# the first stage's data was written beside the full task's
assert os.path.isfile(os.path.join(out, "data", "mqar_16_2", "train.mask")), os.listdir(os.path.join(out, "data"))
md = open(os.path.join(out, "probe.md")).read()
assert "the first 20 steps (by length) on 2 pairs" in md, md
assert os.path.getsize(os.path.join(out, "probe_accuracy.png")) > 1000
PY
then ok; else bad "probe.json / probe.md of the staged run"; fi
# Every run is a run folder (bin/info --list sees the 4), scored (scores.json); --resume of the finished sweep
# keeps every run and trains none; without --resume the same --out is refused before any work.
if [ "$($B/info --list "$tmp/p" | grep -c '30/30\|10/10')" = 4 ] && [ "$(ls "$tmp"/p/*/scores.json | wc -l)" = 4 ]; then ok
else bad "probe's runs are not 4 scored run folders: $($B/info --list "$tmp/p" 2>&1 | head -c 600)"; fi
if python3 -m harness.probe "${TOY[@]}" --curriculum-pairs 2 --curriculum-steps 20 --resume >"$tmp/pr.log" 2>&1 \
   && [ "$(grep -c 'kept, finished before' "$tmp/pr.log")" = 4 ] && ! grep -q "^step " "$tmp/pr.log"; then ok
else bad "probe --resume of a finished sweep trained again: $(head -c 600 "$tmp/pr.log")"; fi
expect_error "probe into a sweep's --out without --resume" "holds 'mqar_16_p4_attention_e64_s1337' already" \
    python3 -m harness.probe "${TOY[@]}"

# Without the curriculum the MQAR rows say so, and the first stage's data is not made. An architecture
# with options of its own (a sliding window) is trained with them, and its rows say so.
expect_ok "probe, not staged" python3 -m harness.probe "${TOY[@]}" --tasks mqar --curriculum-pairs 0 --out "$tmp/q" \
    --archs "attention swa=attention:window=4"
if /usr/bin/python3 -c "
import json, sys; rows = json.load(open('$tmp/q/probe.json'))
sys.exit(0 if len(rows) == 2 and all(r['curriculum'] is None for r in rows) else 1)"; then ok
else bad "--curriculum-pairs 0 still staged"; fi
if /usr/bin/python3 -c "
import json, sys; rows = json.load(open('$tmp/q/probe.json'))
sys.exit(0 if {r['arch']: (r['attn_window'], r['pos']) for r in rows} == {'attention': (0, 'rope'), 'swa': (4, 'rope')}
         and '| swa (window 4) |' in open('$tmp/q/probe.md').read() else 1)"; then ok
else bad "probe's rows and report lack the architecture's window"; fi

expect_error "curriculum longer than the run" "curriculum-steps must be below" \
    python3 -m harness.probe "${TOY[@]}" --curriculum-steps 30
expect_error "bad task" "--tasks must list" python3 -m harness.probe "${TOY[@]}" --tasks recall
expect_error "steps for two lengths, one length" "mqar-iters needs one positive number" \
    python3 -m harness.probe "${TOY[@]}" --mqar-iters 30,40

# --zoology: MQAR under the Zoology protocol, at toy size: every (cell, width, lr, arch) run,
# the best lr kept per (arch, cell, width), the state sizes, the plot.
ZOO=(--zoology --cells 16:2 --widths 16,32 --lrs 1e-3,3e-3 --steps 20 --train-seqs 200 --val-seqs 20 --vocab 64
     --grassmann-windows 1,2,4 --threads 1 --out "$tmp/z")
expect_ok "zoology protocol" python3 -m harness.probe "${ZOO[@]}"
# STATE: a model's state floats per sequence as the registry gives them (bin/info --mixers), its 2 layers'
# at length 16: what the Zoology axis plots.
cat >"$tmp/state.py" <<'PY'
import json, os, subprocess
def state(width, mixer, *extra):
    out = subprocess.run([os.path.join(os.environ.get("BIN", "bin"), "info"), "--mixers", "--json", "--n-layer", "2",
                          "--n-head", "1", "--n-embd", str(width), "--block-size", "16", "--grassmann-windows",
                          "1,2,4", "--mixer", mixer] + [str(x) for x in extra], capture_output=True, text=True)
    return sum(layer["state_floats"] for layer in json.loads(out.stdout)["layers"])
PY
if /usr/bin/python3 - "$tmp/z" "$tmp/state.py" <<'PY'
import sys
exec(open(sys.argv[2]).read())
out = sys.argv[1]
rows = json.load(open(os.path.join(out, "zoology.json")))
assert len(rows) == 8, len(rows)  # 2 archs x 2 widths x 2 lrs
assert {r["lr"] for r in rows} == {1e-3, 3e-3} and {r["n_embd"] for r in rows} == {16, 32}, rows
for r in rows:
    assert 0.0 <= r["accuracy"] <= 1.0 and r["answers"] == 40, r  # 20 sequences x 2 queries
    if r["arch"] == "attention":  # keys and values of 16 positions, 2 layers
        assert r["state_floats"] == state(r["n_embd"], "attention") >= 2 * 2 * 16 * r["n_embd"], r
    else:  # the last max(D) = 4 reduced vectors of rank r, 2 layers
        assert r["state_floats"] == state(r["n_embd"], "grassmann", "--grassmann-rank", r["grassmann_rank"]), r
        assert r["state_floats"] >= 2 * 4 * r["grassmann_rank"], r
md = open(os.path.join(out, "zoology.md")).read()
best = [l for l in md.splitlines() if l.startswith("| 16 | 2 |")]
assert len(best) == 4, best
for line in best:  # the best lr's accuracy is the highest of the row's
    cells = line.split("|")
    accs = [float(x.split(":")[1]) for x in cells[9].split(",")]
    assert abs(float(cells[8].split()[0]) - max(accs)) < 1e-3, line
assert os.path.getsize(os.path.join(out, "zoology_accuracy.png")) > 1000
PY
then ok; else bad "zoology.json / zoology.md"; fi
# Zoology's generator fills every position outside the pairs and the queries with a token of the whole
# vocabulary (random_non_queries): over the 200 training sequences those positions hold every one of the 64 ids.
if /usr/bin/python3 - "$tmp/z" <<'PY'
import os, sys
out = sys.argv[1]
data = os.path.join(out, "data", "zoology_16_2")
raw, mask = open(os.path.join(data, "train.bin"), "rb").read(), open(os.path.join(data, "train.mask"), "rb").read()
tokens = [int.from_bytes(raw[32 + 2 * i:34 + 2 * i], "little") for i in range((len(raw) - 32) // 2)]
marked = mask[-len(tokens):]  # one byte per token after the mask's header
assert set(marked) <= {0, 1} and sum(marked) == 200 * 2, sum(marked)
fill = [tokens[s + i] for s in range(0, 200 * 16, 16) for i in range(4, 16)
        if not marked[s + i] and not (i + 1 < 16 and marked[s + i + 1])]  # neither an answer nor its query
assert len(fill) == 200 * 8, len(fill)
assert set(fill) == set(range(64)), sorted(set(range(64)) - set(fill))
assert "a random token of the whole vocabulary (Zoology's random_non_queries" in open(os.path.join(out, "zoology.md")).read()
PY
then ok; else bad "the zoology protocol's non-query positions are not drawn from the whole vocabulary"; fi
expect_error "zoology, bad cells" "--cells must be a comma list" python3 -m harness.probe "${ZOO[@]}" --cells 16-2
expect_error "zoology, odd length" "even seq_len" python3 -m harness.probe "${ZOO[@]}" --cells 15:2
expect_ok "zoology, report only" python3 -m harness.probe "${ZOO[@]}" --report-only

# --resume: a sweep run a width at a time trains each run once, and ends as the
# sweep run at once (the same runs, the same accuracies: each run is deterministic).
ZR=("${ZOO[@]}" --out "$tmp/zr")
expect_ok "zoology, first width" python3 -m harness.probe "${ZR[@]}" --widths 16 --resume
if python3 -m harness.probe "${ZR[@]}" --resume > "$tmp/zr.log" 2>&1 \
   && grep -q "4 runs kept from .*, 4 to train" "$tmp/zr.log" \
   && [ "$(grep -c '^zoology: L=16 ' "$tmp/zr.log")" -eq 4 ] \
   && /usr/bin/python3 -c "
import json, sys; a = json.load(open('$tmp/z/zoology.json')); b = json.load(open('$tmp/zr/zoology.json'))
key = lambda r: (r['arch'], r['n_embd'], r['lr'], r['accuracy'], r['answer_loss'])
sys.exit(0 if sorted(map(key, a)) == sorted(map(key, b)) else 1)"; then ok
else bad "--resume trained other than the 4 missing runs"; cat "$tmp/zr.log"; fi
expect_error "zoology, resume under other settings" "was trained with steps 20, and this run asks for 30" \
    python3 -m harness.probe "${ZR[@]}" --resume --steps 30
expect_error "zoology, resume with the plain filler" "was trained with fill random, and this run asks for zero" \
    python3 -m harness.probe "${ZR[@]}" --resume --fill zero

# The four families (attention, sliding-window attention, gla, Grassmann), 2 seeds: each one's state size,
# its family and p against attention in zoology.md, a line each in the plot and in zoology.html.
ZF=(--zoology --cells 16:2 --widths 16 --lrs 1e-3 --steps 20 --train-seqs 200 --val-seqs 20 --vocab 64 --seeds 2
    --grassmann-windows 1,2,4 --threads 1 --archs "attention swa=attention:window=4 gla grassmann" --out "$tmp/zf")
expect_ok "zoology, four families" python3 -m harness.probe "${ZF[@]}"
if /usr/bin/python3 - "$tmp/zf" "$tmp/state.py" <<'PY'
import re, sys
exec(open(sys.argv[2]).read())
out = sys.argv[1]
rows = json.load(open(os.path.join(out, "zoology.json")))
assert len(rows) == 8, len(rows)  # 4 archs x 2 seeds
got = {r["arch"]: r["state_floats"] for r in rows}
rank = {r["arch"]: r.get("grassmann_rank") for r in rows}
# 2 layers of width 16, length 16, the registry's: all 16 keys and values; the window's 4; one 16 x 16 matrix
# (1 head); 4 z's of rank r; each with its step's scratch
assert got == {"attention": state(16, "attention"), "swa": state(16, "attention", "--attn-window", 4),
               "gla": state(16, "gla"), "grassmann": state(16, "grassmann", "--grassmann-rank", rank["grassmann"])}, got
assert got["swa"] < got["attention"] and got["gla"] >= 2 * 16 * 16 and got["grassmann"] >= 2 * 4 * rank["grassmann"]
assert {r["arch"]: (r["family"], r.get("attn_window"), r.get("grassmann_pair")) for r in rows} == {
    "attention": ("attention", 0, None), "swa": ("sliding-window attention", 4, None), "gla": ("gla", None, None),
    "grassmann": ("grassmann", None, "wedge")}, rows
md = open(os.path.join(out, "zoology.md")).read()
lines = {l.split("|")[3].strip().split(" ")[0]: [c.strip() for c in l.split("|")] for l in md.splitlines()
         if l.startswith("| 16 | 2 |")}
assert sorted(lines) == ["attention", "gla", "grassmann", "swa"], lines
assert lines["swa"][10] == "sliding-window attention" and lines["swa"][11] == "2", lines["swa"]
assert lines["attention"][12] == "-", lines["attention"]
for arch in ("swa", "gla", "grassmann"):  # 2 seeds: no p-value (3 seeds at least)
    assert lines[arch][12] == "-", lines[arch]
    assert re.fullmatch(r"[0-9.]+( ± [0-9.e-]+| \(same on all 2\))", lines[arch][8]), lines[arch]
page = open(os.path.join(out, "zoology.html")).read()
data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S).group(1))
charts = [s for s in data["sections"] if s["kind"] == "chart"]
assert len(charts) == 1 and charts[0]["xlog"], charts
assert [s["name"] for s in charts[0]["series"]] == ["attention", "swa (sliding-window attention)", "gla", "grassmann"]
assert charts[0]["series"][1]["points"] == [[got["swa"], float(lines["swa"][8].split()[0])]], charts[0]["series"][1]
assert all(os.path.getsize(os.path.join(out, f"zoology_0_{i}.dat")) > 0 for i in range(4))
assert os.path.getsize(os.path.join(out, "zoology_accuracy.png")) > 1000
PY
then ok; else bad "zoology of the four families"; fi
expect_error "zoology, resume with another window" "has runs of 'swa' with attn_window 4, and --archs gives it 8" \
    python3 -m harness.probe "${ZF[@]}" --resume --archs "attention swa=attention:window=8"
expect_error "zoology, options without a name" "has options, so it needs a name" \
    python3 -m harness.probe "${ZF[@]}" --archs "attention attention:window=8"

echo "probe tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
