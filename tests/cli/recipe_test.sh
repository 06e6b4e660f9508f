#!/usr/bin/env bash
# The recipe's switches from outside: bin/train --recipe modern (its switches
# and Muon; each switch alone; --optimizer adamw after it wins) records them in
# the checkpoint and its model line, resume keeps them and refuses a different
# one in one line, --recipe gpt2 writes the same checkpoint as no --recipe, bad
# values get one line and exit 2; eval, sample and inspect read such models.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok

small_corpora  # a.txt, b.txt, a, b, SMALL

expect_ok "train modern" $B/train --data "$tmp/a" --out "$tmp/m.ckpt" "${SMALL[@]}" --max-iters 10 --recipe modern
grep -q "| pos rope | norm pre | rmsnorm, relu2, qk-norm, untied head, zero-init, softcap 15$" "$tmp/out" && ok ||
    bad "train does not report the modern recipe: $(grep '^model:' "$tmp/out")"
grep -aqF '"norm_type\":\"rmsnorm\",\"mlp_act\":\"relu2\",\"qk_norm\":true,\"untied_head\":true,\"zero_init\":true,\"logit_softcap\":15}' "$tmp/m.ckpt" && ok ||
    bad "the checkpoint's config does not record the switches"
grep -aqF '"lm_head.weight"' "$tmp/m.ckpt" && ok || bad "no lm_head.weight in an untied model's checkpoint"
grep -aqF '"ln_f.bias"' "$tmp/m.ckpt" && bad "an RMSNorm model's checkpoint has ln_f.bias" || ok

# the modern recipe is its switches and Muon, spelled out; --optimizer adamw after it wins
SWITCHES=(--pos rope --norm-type rmsnorm --mlp-act relu2 --qk-norm 1 --untied-head 1 --zero-init 1 --logit-softcap 15)
grep -q "^optimizer: muon on " "$tmp/out" && ok || bad "--recipe modern does not train with Muon"
grep -aqF '\"optimizer\":\"muon\"' "$tmp/m.ckpt" && ok || bad "a modern-recipe checkpoint does not record Muon"
expect_ok "modern spelled out" $B/train --data "$tmp/a" --out "$tmp/s.ckpt" "${SMALL[@]}" --max-iters 10 "${SWITCHES[@]}" --optimizer muon
cmp -s "$tmp/m.ckpt" "$tmp/s.ckpt" && ok || bad "--recipe modern differs from its switches and --optimizer muon"
expect_ok "modern with adamw" $B/train --data "$tmp/a" --out "$tmp/ma.ckpt" "${SMALL[@]}" --max-iters 10 --recipe modern --optimizer adamw
grep -q "^optimizer:" "$tmp/out" && bad "--optimizer adamw after --recipe modern still trains with Muon" || ok
expect_ok "switches with adamw" $B/train --data "$tmp/a" --out "$tmp/sa.ckpt" "${SMALL[@]}" --max-iters 10 "${SWITCHES[@]}"
cmp -s "$tmp/ma.ckpt" "$tmp/sa.ckpt" && ok || bad "--recipe modern --optimizer adamw differs from the switches alone"
expect_error "modern, adamw, a muon rate" "--muon-lr is Muon's" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" "${SMALL[@]}" \
    --recipe modern --optimizer adamw --muon-lr 0.01

# an option given wins over the recipe's
expect_ok "modern less qk-norm" $B/train --data "$tmp/a" --out "$tmp/m2.ckpt" "${SMALL[@]}" --max-iters 4 --recipe modern --qk-norm 0 --pos learned
grep -q "| pos learned | norm pre | rmsnorm, relu2, untied head, zero-init, softcap 15$" "$tmp/out" && ok ||
    bad "an option after --recipe did not win: $(grep '^model:' "$tmp/out")"
expect_ok "modern hybrid, post-norm" $B/train --data "$tmp/a" --out "$tmp/h.ckpt" "${SMALL[@]}" --max-iters 4 \
    --recipe modern --mixer grassmann,attention --grassmann-windows 1,2,4 --norm post

# --recipe gpt2 is bin/train's defaults: the same checkpoint, byte for byte
expect_ok "train default" $B/train --data "$tmp/a" --out "$tmp/d.ckpt" "${SMALL[@]}" --max-iters 6 --threads 1
expect_ok "train gpt2 recipe" $B/train --data "$tmp/a" --out "$tmp/g.ckpt" "${SMALL[@]}" --max-iters 6 --threads 1 --recipe gpt2
cmp -s "$tmp/d.ckpt" "$tmp/g.ckpt" && ok || bad "--recipe gpt2 wrote a different checkpoint from no --recipe"
grep -aq "norm_type\|mlp_act\|qk_norm\|untied_head\|zero_init\|logit_softcap" "$tmp/d.ckpt" &&
    bad "a GPT-2-recipe checkpoint records recipe switches" || ok

# resume keeps the switches and refuses different ones
expect_ok "resume modern" $B/train --data "$tmp/a" --out "$tmp/m3.ckpt" "${SMALL[@]}" --max-iters 14 --resume "$tmp/m.ckpt"
grep -q "rmsnorm, relu2, qk-norm, untied head, zero-init, softcap 15$" "$tmp/out" && ok || bad "resume lost the switches"
grep -q "steps 10..14 of 14" "$tmp/out" && ok || bad "resume did not continue at step 10: $(grep '^train:' "$tmp/out")"
expect_ok "resume modern with --recipe modern" $B/train --data "$tmp/a" --out "$tmp/m4.ckpt" --resume "$tmp/m.ckpt" --recipe modern
expect_error "resume with gpt2 recipe" "--qk-norm 0 differs from the checkpoint's 1" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --resume "$tmp/m.ckpt" --recipe gpt2
expect_error "resume norm type" "--norm-type layernorm differs from the checkpoint's rmsnorm" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --resume "$tmp/m.ckpt" --norm-type layernorm
expect_error "resume mlp act" "--mlp-act gelu differs from the checkpoint's relu2" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --resume "$tmp/m.ckpt" --mlp-act gelu
expect_error "resume qk-norm" "--qk-norm 0 differs from the checkpoint's 1" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --resume "$tmp/m.ckpt" --qk-norm 0
expect_error "resume softcap" "--logit-softcap 30 differs from the checkpoint's 15" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --resume "$tmp/m.ckpt" --logit-softcap 30
expect_error "init untied" "--untied-head 0 differs" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --init "$tmp/m.ckpt" \
    --untied-head 0
[ ! -e "$tmp/x.ckpt" ] && ok || bad "a refused run left a checkpoint behind"

# bad values: one line, exit 2
expect_error "unknown recipe" "--recipe must be gpt2 \\| modern \\(got 'llama'\\)" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --recipe llama
expect_error "recipe without value" "'--recipe' needs a value" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --recipe
expect_error "bad norm type" "--norm-type must be layernorm or rmsnorm \\(got 'batch'\\)" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --norm-type batch
expect_error "bad mlp act" "--mlp-act must be gelu or relu2 \\(got 'swish'\\)" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --mlp-act swish
expect_error "qk-norm 2" "qk-norm" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --qk-norm 2
expect_error "tiny softcap" "logit_softcap must be 0 \\(off\\) or between 0.001 and 10000" $B/train --data "$tmp/a" \
    --out "$tmp/x.ckpt" --logit-softcap 0.0001

# eval, sample and inspect of recipe models
expect_ok "eval modern" $B/eval --model "$tmp/m3.ckpt" --data "$tmp/a" --json
grep -q '"loss"' "$tmp/out" && ok || bad "eval printed no loss: $(head -c 300 "$tmp/out")"
expect_ok "sample modern hybrid" $B/sample --model "$tmp/h.ckpt" --prompt "The whale" --tokens 30 --temperature 0
expect_ok "inspect modern" $B/inspect --model "$tmp/m3.ckpt" --prompt "The whale, the" --out "$tmp/insp"
expect_ok "inspect modern hybrid" $B/inspect --model "$tmp/h.ckpt" --prompt "The whale, the" --out "$tmp/insp2"

echo "recipe tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
