#!/usr/bin/env bash
# The HTML pages in a real browser: bin/inspect's inspect.html (a Transformer,
# a hybrid of Grassmann, attention and gla layers, and Grassmann alone), make
# compare's compare.html, make paper's paper.html, a run folder's run.html and
# two runs overlaid (harness/runs_page.py), each loaded from file:// by
# Debian's chromium, headless, through playwright-core (npm, installed into a
# scratch folder outside the repository: tests/js/npm_lib.sh);
# tests/js/browser_test.mjs checks them. Where chromium, node or npm is missing
# it says so and counts as not run (exit 0; make deps installs chromium).
# BROWSER_SHOTS=DIR keeps a screenshot of each view.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BIN:-bin}
NAME="browser test"
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
if [ -z "$CHROMIUM" ]; then
    echo "$NAME: NOT RUN (chromium is not installed: make deps)"
    exit 0
fi
source tests/js/npm_lib.sh
NPM_DIR=${TMPDIR:-/tmp}/lm-browser-npm
npm_install "$NAME" "$NPM_DIR" playwright-core@1.49.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
quiet() { "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "$NAME: FAIL: $*"; exit 1; }; }

# Two small models and their pages; a prompt with "</script>" in it, which
# the page's data must not let close its script tag.
for i in $(seq 1 60); do echo "The whale, the whale! Line $i of a small corpus </script> & sea."; done >"$tmp/a.txt"
quiet "$B"/prepare --input "$tmp/a.txt" --out "$tmp/a" --val-fraction 0.1 --test-fraction 0.1
SMALL=(--n-layer 2 --n-head 4 --n-embd 32 --block-size 48 --batch-size 4 --eval-iters 1 --max-iters 20 --warmup-iters 2 --threads 2)
quiet "$B"/train --data "$tmp/a" --out "$tmp/a.ckpt" "${SMALL[@]}"
quiet "$B"/train --data "$tmp/a" --out "$tmp/g.ckpt" "${SMALL[@]}" --n-layer 3 --mixer grassmann,attention,gla --grassmann-rank 6 \
    --grassmann-windows 1,2,4
PROMPT="The whale </script> & the sea! Line 7"
quiet "$B"/inspect --model "$tmp/a.ckpt" --prompt "$PROMPT" --out "$tmp/attention" --induction-length 8 --threads 2
quiet "$B"/inspect --model "$tmp/g.ckpt" --prompt "$PROMPT" --out "$tmp/hybrid" --induction-length 8 --threads 2
# Grassmann alone: a page with no attention heads at all
quiet "$B"/train --data "$tmp/a" --out "$tmp/gg.ckpt" "${SMALL[@]}" --max-iters 4 --mixer grassmann --grassmann-rank 6 --grassmann-windows 1,2,4
quiet "$B"/inspect --model "$tmp/gg.ckpt" --prompt "$PROMPT" --out "$tmp/grassmann" --threads 2

# make compare at its smallest: two architectures, two seeds, both budgets.
quiet /usr/bin/python3 -m harness.compare --data "$tmp/a" --out "$tmp/compare" --archs "attention grassmann" \
    --budget tokens:1536 --budget seconds:1 --seeds 2 --n-layer 1 --n-head 2 --n-embd 32 --block-size 16 \
    --batch-size 4 --threads 1 --curve-points 3 --seconds-eval-interval 20 --eval-iters 2 --grassmann-windows 1,2,4 \
    --warmup-iters 2
# make paper's report from compare reports with training logs (tests/harness/paper_test.py's).
quiet /usr/bin/python3 -c "
import os, sys
from tests.harness.paper_test import fake_compare, fake_log
out = sys.argv[1]
for norm, ppl in (('pre', {'transformer': [200.0, 210.0], 'grassmann': [220.0, 230.0], 'hybrid': [190.0, 195.0]}),
                  ('post', {'transformer': [250.0, 240.0], 'grassmann': [300.0, 290.0], 'hybrid': [240.0, 235.0]})):
    fake_compare(out, norm, ppl)
    for name in ppl:
        for k in range(2):
            fake_log(out, norm, name, 1337 + k, [(7.0 - i * 0.2 - k * 0.1, 6.5 - i * 0.25 - k * 0.05) for i in range(8)])
" "$tmp/paper"
quiet /usr/bin/python3 -m harness.paper --out "$tmp/paper" --report-only --data "$tmp/paper"

# A run folder's own page and two runs overlaid (harness/runs_page.py).
quiet "$B"/train --data "$tmp/a" --run "$tmp/runs/a" "${SMALL[@]}" --eval-interval 5 --ckpt-interval 10 --keep-checkpoints 1
quiet "$B"/train --data "$tmp/a" --run "$tmp/runs/b" "${SMALL[@]}" --eval-interval 5 --lr 3e-3
quiet /usr/bin/python3 -m harness.runs_page "$tmp/runs/a" --sample-tokens 20 --prompt "The whale </script>"
quiet /usr/bin/python3 -m harness.runs_page "$tmp/runs/a" "$tmp/runs/b" --out "$tmp/runs/runs.html"

SHOTS=${BROWSER_SHOTS:--}
[ "$SHOTS" = - ] || mkdir -p "$SHOTS"
node tests/js/browser_test.mjs "$NPM_DIR/node_modules" "$CHROMIUM" "$SHOTS" inspect "$tmp/attention" "$tmp/hybrid" "$tmp/grassmann" \
    report "$tmp/compare/compare.html" "$tmp/paper/paper.html" "$tmp/runs/a/run.html" "$tmp/runs/runs.html"
