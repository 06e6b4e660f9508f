#!/usr/bin/env bash
# The main job: on a fresh machine, install what is missing, build, fetch and
# prepare Moby Dick, train a small Transformer for a few minutes with live
# progress, report validation and test perplexity, and sample a paragraph.
# Every option of bin/train can be appended: bash scripts/demo.sh --max-iters 500
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; then bash scripts/install-deps.sh; fi
make -j2
bash data/fetch_moby_dick.sh
mkdir -p runs/demo
echo
echo "== training a 4-layer Transformer on Moby Dick (Ctrl-C saves and stops; --resume continues)"
bin/train --data data/moby --out runs/demo/model.ckpt --log runs/demo/log.csv \
    --n-layer 4 --n-head 4 --n-embd 128 --block-size 64 --batch-size 12 \
    --max-iters 2000 --lr 1e-3 --min-lr 1e-4 --warmup-iters 100 --log-interval 50 --eval-interval 250 "$@"
echo
echo "== held-out perplexity (every token scored once)"
bin/eval --model runs/demo/model.ckpt --data data/moby --split val
bin/eval --model runs/demo/model.ckpt --data data/moby --split test
echo
echo "== a sample (temperature 0.8)"
bin/sample --model runs/demo/model.ckpt --prompt "Call me Ishmael. " --tokens 600 --temperature 0.8 --seed 7
