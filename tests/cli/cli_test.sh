#!/usr/bin/env bash
# The programs from the outside: every kind of bad input gives one line on
# stderr naming the problem and exit status 2, never a crash, and never
# touches a good checkpoint; resume continues exactly; Ctrl-C saves; a
# diverging run stops and keeps the last good checkpoint.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok

# A small corpus and two data directories with different tokenizers.
small_corpora  # a.txt, b.txt, a, b, SMALL
expect_ok "prepare byte" $B/prepare --input "$tmp/a.txt" --out "$tmp/abyte" --tokenizer byte
expect_ok "train good" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" "${SMALL[@]}" --max-iters 10
cp "$tmp/good.ckpt" "$tmp/good.copy"
# warm-up longer than the run: one line saying so (the default 100 against 10 steps), none when it fits
if [ "$(grep -c "warning: --warmup-iters 100 exceeds the run's 10 steps" "$tmp/err")" = 1 ] &&
   [ "$(wc -l <"$tmp/err")" = 1 ]; then ok; else bad "no warm-up warning: $(head -c 300 "$tmp/err")"; fi
expect_ok "train, warm-up within the run" $B/train --data "$tmp/a" --out "$tmp/w.ckpt" "${SMALL[@]}" --max-iters 10 --warmup-iters 10
if grep -q "warmup" "$tmp/err"; then bad "a warm-up warning for a warm-up that fits: $(head -c 300 "$tmp/err")"; else ok; fi

# --help everywhere; --version everywhere: one line on stdout, nothing else, exit 0
for p in prepare train info eval sample; do
    if $B/$p --help | grep -q "usage: bin/$p"; then ok; else bad "$p --help"; fi
done
for p in prepare train info eval sample inspect probegen gemm-rate convert; do
    $B/$p --version >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && [ ! -s "$tmp/err" ] && [ "$(wc -l <"$tmp/out")" = 1 ] && grep -qE "^$p \(lm\) [0-9]+\.[0-9]+\.[0-9]+$" "$tmp/out" \
        && ok || bad "$p --version: exit $rc, '$(head -c 200 "$tmp/out")' '$(head -c 200 "$tmp/err")'"
done

# bin/info --mixers: the registry described at a model. Its JSON names every registered mixer, each
# one's tensors add up to its parameters, the model's count is bin/train --count-params's, a window
# bounds attention's state, and a checkpoint (or its config JSON on stdin) gives the same description.
vocab=$(/usr/bin/python3 -c "import struct,sys; print(struct.unpack('<Q', open(sys.argv[1],'rb').read()[16:24])[0])" "$tmp/a/train.bin")
mix=(--mixer grassmann,attention --grassmann-rank 6 --grassmann-windows 1,3)
expect_ok "info --mixers" $B/info --mixers "${SMALL[@]:0:8}" "${mix[@]}"
grep -q "^gla: " "$tmp/out" && grep -q "layer 1, attention: " "$tmp/out" && ok || bad "info --mixers text: $(head -c 300 "$tmp/out")"
$B/info --mixers --json "${SMALL[@]:0:8}" "${mix[@]}" --vocab-size "$vocab" >"$tmp/mixers.json"
for b in 16 32; do  # the state at two block sizes, with a window of 5 and without
    $B/info --mixers --json "${SMALL[@]:0:6}" --block-size $b --mixer attention --attn-window 5 >"$tmp/window$b.json"
    $B/info --mixers --json "${SMALL[@]:0:6}" --block-size $b --mixer attention >"$tmp/full$b.json"
done
count=$($B/train --data "$tmp/a" --count-params "${SMALL[@]:0:8}" "${mix[@]}")
if /usr/bin/python3 - "$tmp/mixers.json" "$tmp"/window{16,32}.json "$tmp"/full{16,32}.json "$count" <<'PY'; then ok; else bad "info --mixers --json"; fi
import json, sys
d, (w16, w32, f16, f32) = json.load(open(sys.argv[1])), [json.load(open(p))["layers"][0]["state_floats"] for p in sys.argv[2:6]]
names = [m["name"] for m in d["mixers"]]
assert {"attention", "grassmann", "gla"} <= set(names), names
for m in d["mixers"] + d["layers"]:
    size = lambda t: t["shape"][0] * (t["shape"][1] if len(t["shape"]) > 1 else 1)
    assert sum(size(t) for t in m["tensors"]) == m["params"] > 0, m
    f = m["flops_per_token"]
    assert f["total"] == f["mixing"] + f["weights"] and f["weights"] > 0, m
assert [l["mixer"] for l in d["layers"]] == ["grassmann", "attention"]
assert d["model"]["params"] == int(sys.argv[6]), (d["model"]["params"], sys.argv[6])
knob = [o for m in d["mixers"] for o in m["options"] if o["size_knob"]]
assert [(o["name"], o["arch_key"], o["json_key"]) for o in knob] == [("grassmann-rank", "rank", "grassmann_rank")], knob
w = next(o for m in d["mixers"] for o in m["options"] if o["arch_key"] == "window")
assert w["family"] == "sliding-window attention" and w["min"] == 0 and w["default"] == 0, w
assert w16 == w32 < f16 < f32, (w16, w32, f16, f32)  # the window's cache is its own size, the full one grows with T
assert all(m["about"] for m in d["mixers"])
PY
$B/info --mixers --json "$tmp/good.ckpt" >"$tmp/ckpt.json" && $B/info --json "$tmp/good.ckpt" |
    /usr/bin/python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin)['model']))" |
    $B/info --mixers --json - >"$tmp/stdin.json" && cmp -s "$tmp/ckpt.json" "$tmp/stdin.json" &&
    grep -q '"layers"' "$tmp/ckpt.json" && ok || bad "info --mixers CKPT and - differ"
expect_error "info --mixers unknown mixer" "unknown mixer 'nope'" $B/info --mixers --mixer nope
expect_error "info --mixers bad value" "at least 2" $B/info --mixers --mixer grassmann --grassmann-rank 1
expect_error "info --mixers options and a checkpoint" "--n-embd: the model comes from" $B/info --mixers "$tmp/good.ckpt" --n-embd 32
expect_error "info --mixers bad stdin" "invalid JSON" $B/info --mixers - <<<"{not json"
expect_error "info --mixers with --list" "at most one" $B/info --mixers --list "$tmp"
expect_error "info, a model option without --mixers" "--n-layer describes the model of --mixers" \
    $B/info "$tmp/good.ckpt" --n-layer 3

# prepare: files
: >"$tmp/empty.txt"
expect_error "prepare missing" "cannot open" $B/prepare --input "$tmp/nope.txt" --out "$tmp/x"
expect_error "prepare empty" "empty" $B/prepare --input "$tmp/empty.txt" --out "$tmp/x"
mkdir -p "$tmp/emptydir"
expect_error "prepare directory" "directory" $B/prepare --input "$tmp/emptydir" --out "$tmp/x"
expect_error "prepare unknown option" "unknown option" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --bogus
expect_error "prepare tokenizer" "unknown tokenizer" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer wordpiece
expect_error "prepare fraction" "not a number" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --val-fraction abc
expect_error "prepare negative fraction" "range" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --val-fraction -0.1
expect_error "prepare no args" "required" $B/prepare
expect_error "prepare missing value" "needs a value" $B/prepare --input

# prepare: explicit splits (--train/--val/--test, as Wikitext-2 publishes them), each file used whole
mkdir -p "$tmp/sp/train" "$tmp/sp/nofiles" "$tmp/sp/zeros"
for i in $(seq 1 30); do echo "The whale, line $i of the first training document."; done >"$tmp/sp/train/1.txt"
for i in $(seq 1 30); do echo "Second document, line $i: a ship."; done >"$tmp/sp/train/2.txt"
for i in $(seq 1 10); do echo "Validation $i: zebra QUIZ."; done >"$tmp/sp/val.txt"      # z, Q, U, I, Z, V are not in train
for i in $(seq 1 8); do echo "Test $i, fjord & xylophone."; done >"$tmp/sp/test.txt"
: >"$tmp/sp/zeros/a.txt"
expect_ok "prepare splits" $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/val.txt" --test "$tmp/sp/test.txt" --out "$tmp/spl"
grep -q "train 2532, val 261, test 216 tokens" "$tmp/out" && ok || bad "prepare splits counts: $(cat "$tmp/out")"
# the tokenizer knows the training text's characters only; each split decodes to its files
if /usr/bin/python3 - "$tmp/spl" "$tmp/sp" <<'PY'; then ok; else bad "prepare splits: tokenizer or token files"; fi
import struct, sys
d, src = sys.argv[1], sys.argv[2]
chars = [chr(int(h, 16)) for h in open(f"{d}/tokenizer.txt").read().split("\n")[2:] if h]
train = open(f"{src}/train/1.txt").read() + open(f"{src}/train/2.txt").read()
assert sorted(chars) == sorted(set(train)), "the tokenizer saw more than the training text"
table = ["\0"] + chars
for split, text in (("train", train), ("val", open(f"{src}/val.txt").read()), ("test", open(f"{src}/test.txt").read())):
    b = open(f"{d}/{split}.bin", "rb").read()
    n = struct.unpack("<Q", b[24:32])[0]
    got = "".join(table[t] for t in struct.unpack(f"<{n}H", b[32:32 + 2 * n]))  # then val's and test's unknown tokens' text
    assert got == "".join(c if c in chars else "\0" for c in text), split
PY
expect_ok "prepare splits, no test" $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/val.txt" --out "$tmp/spl2"
[ ! -e "$tmp/spl2/test.bin" ] && cmp -s "$tmp/spl/val.bin" "$tmp/spl2/val.bin" && ok || bad "prepare splits without --test"
expect_ok "train on splits" $B/train --data "$tmp/spl2" --out "$tmp/spl2.ckpt" "${SMALL[@]}" --max-iters 2
expect_error "prepare splits with input" "--input cannot be used with --train" \
    $B/prepare --input "$tmp/a.txt" --train "$tmp/sp/train" --val "$tmp/sp/val.txt" --out "$tmp/x"
expect_error "prepare splits with fraction" "--val-fraction and --test-fraction cannot be used" \
    $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/val.txt" --val-fraction 0.1 --out "$tmp/x"
expect_error "prepare splits with test fraction" "--val-fraction and --test-fraction cannot be used" \
    $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/val.txt" --test-fraction 0 --out "$tmp/x"
expect_error "prepare train without val" "--train needs --val" $B/prepare --train "$tmp/sp/train" --out "$tmp/x"
expect_error "prepare val without train" "need --train" $B/prepare --val "$tmp/sp/val.txt" --test "$tmp/sp/test.txt" --out "$tmp/x"
expect_error "prepare missing val file" "^prepare: error: --val: cannot open '.*/nope.txt'" \
    $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/nope.txt" --out "$tmp/x"
expect_error "prepare missing train dir" "--train: cannot open '.*/nodir'" \
    $B/prepare --train "$tmp/sp/nodir" --val "$tmp/sp/val.txt" --out "$tmp/x"
expect_error "prepare empty test file" "--test: '.*/empty.txt' is empty" \
    $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/val.txt" --test "$tmp/empty.txt" --out "$tmp/x"
expect_error "prepare split dir without files" "--val: directory '.*/nofiles' holds no files" \
    $B/prepare --train "$tmp/sp/train" --val "$tmp/sp/nofiles" --out "$tmp/x"
expect_error "prepare split dir of empty files" "--train: '.*/zeros' is empty" \
    $B/prepare --train "$tmp/sp/zeros" --val "$tmp/sp/val.txt" --out "$tmp/x"
[ ! -e "$tmp/x" ] && ok || bad "a refused prepare wrote $tmp/x"

# train: data
expect_error "train missing data" "cannot open" $B/train --data "$tmp/none" --out "$tmp/o.ckpt"
mkdir -p "$tmp/textdata" && cp "$tmp/a/tokenizer.txt" "$tmp/textdata/" && cp "$tmp/a.txt" "$tmp/textdata/train.bin" && cp "$tmp/a/val.bin" "$tmp/textdata/"
expect_error "train text as tokens" "not a token file" $B/train --data "$tmp/textdata" --out "$tmp/o.ckpt"
mkdir -p "$tmp/emptydata" && cp "$tmp/a/tokenizer.txt" "$tmp/emptydata/" && : >"$tmp/emptydata/train.bin" && cp "$tmp/a/val.bin" "$tmp/emptydata/"
expect_error "train empty token file" "not a token file" $B/train --data "$tmp/emptydata" --out "$tmp/o.ckpt"
# A token file whose ids exceed its declared vocabulary.
mkdir -p "$tmp/bigid" && cp "$tmp/a/"* "$tmp/bigid/"
printf '\xff\xff' | dd of="$tmp/bigid/train.bin" bs=1 seek=40 conv=notrunc status=none
expect_error "train token id >= vocab" "outside the vocabulary" $B/train --data "$tmp/bigid" --out "$tmp/o.ckpt"
head -c 45 "$tmp/a/train.bin" >"$tmp/trunc.bin" && mkdir -p "$tmp/trunc" && cp "$tmp/a/"* "$tmp/trunc/" && cp "$tmp/trunc.bin" "$tmp/trunc/train.bin"
expect_error "train truncated token file" "corrupt token file" $B/train --data "$tmp/trunc" --out "$tmp/o.ckpt"

# train: sizes and options
expect_error "n_embd % n_head" "divisible" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --n-embd 30 --n-head 4
expect_error "zero batch" "at least 1" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --batch-size 0
expect_error "negative layers" "non-negative integer" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --n-layer -2
expect_error "absurd width" "too large" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --n-embd 100000000
expect_error "absurd block" "too large" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --block-size 99999999
expect_error "block too big for data" "too small for block_size" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --block-size 4096
expect_error "bad lr" "not a number" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --lr fast
expect_error "bad dropout" "range" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --dropout 1.5
expect_error "unknown option" "unknown option" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --learning-rate 1
expect_error "a mistyped option, its nearest name" "unknown option '--mixr': did you mean --mixer\?" \
    $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixr grassmann
expect_error "a shared prefix, the names it starts" "unknown option '--n': could be --norm, .*--n-layer and 2 more" \
    $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --n 2
expect_error "a mistyped option of eval" "did you mean --model\?" $B/eval --modle "$tmp/o.ckpt"
# A unique prefix is refused, naming the option: getopt would take --conf for --config
# while the pre-scan for --config (and --recipe) matches whole names, and train the defaults.
echo '{"lr": 0.01}' >"$tmp/c5.json"
expect_error "--conf for --config" "'--conf' is short for --config: write options in full" \
    $B/train --conf "$tmp/c5.json" --data "$tmp/a" --out "$tmp/o.ckpt"
expect_error "--rec for --recipe" "'--rec' is short for --recipe" $B/train --rec=modern --data "$tmp/a" --out "$tmp/o.ckpt"
expect_error "--js for --json, bin/info" "'--js' is short for --json" $B/info --js "$tmp/o.ckpt"
expect_error "--mod for --model, bin/sample" "'--mod' is short for --model" $B/sample --mod "$tmp/o.ckpt"
expect_error "stray argument" "unexpected argument" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" extra
expect_error "bad pos" "learned, sinusoidal or rope" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --pos alibi
expect_error "unknown mixer" "unknown mixer" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixer mamba
expect_error "mixer list length" "n_layer" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --n-layer 3 --mixer attention,grassmann
expect_error "empty windows" "empty" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixer grassmann --grassmann-windows ""
expect_error "non-numeric windows" "not a non-negative integer" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixer grassmann --grassmann-windows 1,two
expect_error "zero window" "positive" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixer grassmann --grassmann-windows 0,1
expect_error "window >= block" "block_size" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixer grassmann --block-size 16 --grassmann-windows 1,16
expect_error "rank < 2" "at least 2" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --mixer grassmann --grassmann-rank 1
expect_error "larger than memory" "needs [0-9.]+ GiB .* but [0-9.]+ GiB are available" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" \
    --n-layer 8 --n-head 8 --n-embd 512 --block-size 1024 --batch-size 512
[ ! -e "$tmp/o.ckpt" ] && ok || bad "a failed run left a checkpoint behind"

# checkpoints: corrupted, truncated, mismatched -- and the good one untouched
cp "$tmp/good.ckpt" "$tmp/flip.ckpt"
printf '\x55' | dd of="$tmp/flip.ckpt" bs=1 seek=$(( $(stat -c %s "$tmp/good.ckpt") - 100 )) conv=notrunc status=none  # in the tensor data
head -c 2000 "$tmp/good.ckpt" >"$tmp/cut.ckpt"
expect_error "resume missing" "cannot open" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/missing.ckpt"
expect_error "resume flipped byte" "checksum" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/flip.ckpt"
expect_error "resume truncated" "corrupt|not a safetensors" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/cut.ckpt"
expect_error "resume text file" "not a safetensors|corrupt" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/a.txt"
# The checksum's kinds: a new checkpoint holds XXH3's; the older kind, FNV-1a, still loads (the same file
# with only its checksum made again, byte for byte what the older writer wrote) and samples the same text,
# a flipped byte refused under either; a kind no reader knows is named.
[ "$(head -c 45 "$tmp/good.ckpt" | tail -c 20)" = '"checksum":"xxh3-64:' ] && ok || bad "a new checkpoint's checksum is not XXH3's"
/usr/bin/python3 -m tests.tools.ckpt_forge fnv1a "$tmp/good.ckpt" "$tmp/fnv.ckpt"
expect_ok "sample an FNV-1a checkpoint" $B/sample --model "$tmp/fnv.ckpt" --tokens 20 --seed 3
cp "$tmp/out" "$tmp/fnv.out"
expect_ok "sample an XXH3 checkpoint" $B/sample --model "$tmp/good.ckpt" --tokens 20 --seed 3
cmp -s "$tmp/out" "$tmp/fnv.out" && ok || bad "the FNV-1a checkpoint samples other text than the XXH3 one"
for c in good fnv; do
    cp "$tmp/$c.ckpt" "$tmp/$c-flip.ckpt"
    printf '\x55' | dd of="$tmp/$c-flip.ckpt" bs=1 seek=$(( $(stat -c %s "$tmp/good.ckpt") - 100 )) conv=notrunc status=none
    expect_error "sample $c flipped byte" "checksum mismatch" $B/sample --model "$tmp/$c-flip.ckpt" --tokens 2
done
LC_ALL=C sed 's/"checksum":"xxh3-64:/"checksum":"xxh9-64:/' "$tmp/good.ckpt" >"$tmp/kind.ckpt"
expect_error "sample unknown checksum kind" "checksum of a kind this program does not know \('xxh9-64:'\)" \
    $B/sample --model "$tmp/kind.ckpt" --tokens 2
expect_error "resume other tokenizer" "tokenizer" $B/train --data "$tmp/b" --out "$tmp/good.ckpt" --resume "$tmp/good.ckpt"
expect_error "resume arch change" "--n-layer 3 differs from the checkpoint's 2" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/good.ckpt" --n-layer 3
expect_error "resume mixer change" "--mixer grassmann differs from the checkpoint's attention,attention" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/good.ckpt" --mixer grassmann
expect_error "resume windows change" "--grassmann-windows 1,2 differs from the checkpoint's 1,2,4,8,12,16" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/good.ckpt" --grassmann-windows 1,2
expect_error "resume pos change" "--pos sinusoidal differs" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/good.ckpt" --pos sinusoidal
# The command that started a run, plus --resume, continues it.
expect_ok "resume with the original command line" $B/train --data "$tmp/a" --out "$tmp/again.ckpt" "${SMALL[@]}" --max-iters 12 \
    --mixer attention --pos learned --resume "$tmp/good.ckpt"
grep -q "steps 10..12 of 12" "$tmp/out" && ok || bad "resume with the original command line did not continue at step 10: $(grep '^train:' "$tmp/out")"
# The same with one mixer name for every layer of a Grassmann model (it was refused as differing
# from the checkpoint's "grassmann,grassmann").
expect_ok "train grassmann" $B/train --data "$tmp/a" --out "$tmp/gr.ckpt" "${SMALL[@]}" --max-iters 4 --stop-at 2 --mixer grassmann --grassmann-windows 1,2
expect_ok "resume grassmann with the original command line" $B/train --data "$tmp/a" --out "$tmp/gr.ckpt" "${SMALL[@]}" --grassmann-windows 1,2 \
    --max-iters 4 --mixer grassmann --resume "$tmp/gr.ckpt"
grep -q "steps 2..4 of 4" "$tmp/out" && ok || bad "resume --mixer grassmann did not continue at step 2: $(grep '^train:' "$tmp/out")"
expect_error "resume grassmann as a hybrid" "--mixer grassmann,attention differs from the checkpoint's grassmann,grassmann" \
    $B/train --data "$tmp/a" --out "$tmp/gr.ckpt" --resume "$tmp/gr.ckpt" --mixer grassmann,attention

# bin/eval --ablate LAYER:PART: leaving nothing out is the plain eval to the digit; leaving an
# offset or a head out moves the loss; --ablate-offset L:D is --ablate L:offsetD, bit for bit;
# a layer or part the model lacks is one line naming the layer's parts.
$B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --json >"$tmp/plain.json" 2>/dev/null
$B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --json --ablate-offset "" >"$tmp/none.json" 2>/dev/null
$B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --json --ablate-offset 1:2 >"$tmp/abl.json" 2>/dev/null
$B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --json --ablate 1:offset2 >"$tmp/part.json" 2>/dev/null
loss() { sed -n 's/.*"loss":\([0-9.]*\).*/\1/p' "$1"; }
if [ -n "$(loss "$tmp/plain.json")" ] && [ "$(loss "$tmp/plain.json")" = "$(loss "$tmp/none.json")" ] \
    && [ "$(loss "$tmp/plain.json")" != "$(loss "$tmp/abl.json")" ] && grep -q '"ablated_offsets":"1:2"' "$tmp/abl.json" \
    && [ "$(loss "$tmp/abl.json")" = "$(loss "$tmp/part.json")" ] && grep -q '"ablated":"1:offset2"' "$tmp/part.json"; then ok
else bad "--ablate: plain $(loss "$tmp/plain.json"), nothing left out $(loss "$tmp/none.json"), offset 2 of layer 1 $(loss "$tmp/abl.json"), as a part $(loss "$tmp/part.json")"; fi
# A head of attention (good.ckpt) and of gla: each moves the loss.
$B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --json >"$tmp/aplain.json" 2>/dev/null
$B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --json --ablate 0:head1,1:head0 >"$tmp/ahead.json" 2>/dev/null
[ -n "$(loss "$tmp/ahead.json")" ] && [ "$(loss "$tmp/aplain.json")" != "$(loss "$tmp/ahead.json")" ] && ok \
    || bad "--ablate attention heads: plain $(loss "$tmp/aplain.json"), without two heads $(loss "$tmp/ahead.json")"
expect_ok "train gla" $B/train --data "$tmp/a" --out "$tmp/gla.ckpt" "${SMALL[@]}" --max-iters 2 --mixer gla
$B/eval --model "$tmp/gla.ckpt" --data "$tmp/a" --json >"$tmp/gplain.json" 2>/dev/null
$B/eval --model "$tmp/gla.ckpt" --data "$tmp/a" --json --ablate 1:head1 >"$tmp/ghead.json" 2>/dev/null
[ -n "$(loss "$tmp/ghead.json")" ] && [ "$(loss "$tmp/gplain.json")" != "$(loss "$tmp/ghead.json")" ] && ok \
    || bad "--ablate gla head: plain $(loss "$tmp/gplain.json"), without head 1 of layer 1 $(loss "$tmp/ghead.json")"
expect_error "ablate a part the layer lacks" "^eval: error: layer 0 \(grassmann\) has no part 'offset4'; its parts: offset1, offset2\$" \
    $B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --ablate-offset 0:4
expect_error "ablate a head the layer lacks" "layer 0 \(attention\) has no part 'head7'; its parts: head0, head1" \
    $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --ablate 0:head7
expect_error "ablate a layer the model lacks" "layer 2 does not exist" $B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --ablate-offset 2:1
expect_error "ablate-offset, bad list" "LAYER:OFFSET pairs" $B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --ablate-offset 1-2
expect_error "ablate, bad list" "LAYER:PART pairs" $B/eval --model "$tmp/gr.ckpt" --data "$tmp/a" --ablate 1
# --norm post and per-layer window schedules (issue 19): every program follows the checkpoint
expect_error "train bad norm" "--norm must be pre or post \\(got 'side'\\)" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" "${SMALL[@]}" --norm side
expect_error "train short window schedule" "has 2 lists but n_layer is 3" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" "${SMALL[@]}" \
    --n-layer 3 --mixer grassmann --grassmann-windows "1;2"
expect_error "train long window schedule" "more than n_layer \\(2\\) lists" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" "${SMALL[@]}" \
    --mixer grassmann --grassmann-windows "1;2;4"
expect_ok "train post-norm schedule" $B/train --data "$tmp/a" --out "$tmp/post.ckpt" "${SMALL[@]}" --max-iters 4 --stop-at 2 \
    --mixer grassmann,attention --norm post --grassmann-windows "1,2;4"
grep -q "| norm post" "$tmp/out" && ok || bad "train does not report norm post: $(grep '^model:' "$tmp/out")"
expect_error "resume norm change" "--norm pre differs from the checkpoint's post" $B/train --data "$tmp/a" --out "$tmp/post.ckpt" \
    --resume "$tmp/post.ckpt" --norm pre
expect_error "resume schedule change" "--grassmann-windows 1,2 differs from the checkpoint's 1,2;4" $B/train --data "$tmp/a" \
    --out "$tmp/post.ckpt" --resume "$tmp/post.ckpt" --grassmann-windows 1,2
expect_ok "resume post-norm with the original command line" $B/train --data "$tmp/a" --out "$tmp/post.ckpt" "${SMALL[@]}" \
    --max-iters 4 --mixer grassmann,attention --norm post --grassmann-windows "1,2;4" --resume "$tmp/post.ckpt"
grep -q "steps 2..4 of 4" "$tmp/out" && ok || bad "resume post-norm did not continue at step 2: $(grep '^train:' "$tmp/out")"
expect_ok "eval post-norm" $B/eval --model "$tmp/post.ckpt" --data "$tmp/a"
# A control's pair map: in the start-up line and the config, kept on resume, sampled and inspected.
expect_error "unknown pair map" "must be wedge, outer or sum \\(got 'cross'\\)" $B/train --data "$tmp/a" --out "$tmp/pair.ckpt" \
    --mixer grassmann --grassmann-pair cross
expect_ok "train outer pair map" $B/train --data "$tmp/a" --out "$tmp/pair.ckpt" "${SMALL[@]}" --max-iters 4 --stop-at 2 \
    --mixer grassmann,attention --grassmann-pair outer --grassmann-rank 4 --grassmann-windows 1,3
grep -q "pair map outer" "$tmp/out" && ok || bad "train does not report the pair map: $(grep '^model:' "$tmp/out")"
expect_error "resume pair map change" "--grassmann-pair sum differs from the checkpoint's outer" $B/train --data "$tmp/a" \
    --out "$tmp/pair.ckpt" --resume "$tmp/pair.ckpt" --grassmann-pair sum
expect_ok "sample outer pair map" $B/sample --model "$tmp/pair.ckpt" --tokens 20 --seed 3
expect_ok "inspect outer pair map" $B/inspect --model "$tmp/pair.ckpt" --prompt "The whale, the" --out "$tmp/insp-pair"
grep -q "^  offset_norms: " "$tmp/out" && ! grep -q "plucker_residual" "$tmp/out" && ok \
    || bad "inspect of an outer map: offsets missing or a Plücker residual reported"
expect_ok "sample post-norm" $B/sample --model "$tmp/post.ckpt" --tokens 20 --seed 3
expect_ok "inspect post-norm" $B/inspect --model "$tmp/post.ckpt" --prompt "The whale, the" --out "$tmp/insp-post"
expect_error "eval flipped byte" "checksum" $B/eval --model "$tmp/flip.ckpt" --data "$tmp/a"
expect_error "eval truncated" "corrupt|not a safetensors" $B/eval --model "$tmp/cut.ckpt" --data "$tmp/a"
expect_error "eval other tokenizer" "tokenizer" $B/eval --model "$tmp/good.ckpt" --data "$tmp/b"
expect_error "eval byte data, char model" "tokenizer" $B/eval --model "$tmp/good.ckpt" --data "$tmp/abyte/val.bin"
expect_error "eval text as tokens" "not a token file" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a.txt"
expect_error "eval missing model" "cannot open" $B/eval --model "$tmp/none.ckpt" --data "$tmp/a"
expect_error "eval bad split" "val or test" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --split train
expect_error "eval zero stride" "positive" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --stride 0
expect_error "sample missing model" "cannot open" $B/sample --model "$tmp/none.ckpt"
expect_error "sample bad temperature" "range" $B/sample --model "$tmp/good.ckpt" --temperature -1
expect_error "sample unknown option" "unknown option" $B/sample --model "$tmp/good.ckpt" --top_p 0.9
cmp -s "$tmp/good.ckpt" "$tmp/good.copy" && ok || bad "a failed command modified the good checkpoint"
ls "$tmp" | grep -q '\.tmp\.' && bad "a temporary checkpoint was left behind" || ok

# eval and sample work on the good checkpoint
expect_ok "eval" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --split test
grep -q perplexity "$tmp/out" && ok || bad "eval printed no perplexity"
expect_ok "eval json" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a/val.bin" --json --stride 8
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["perplexity"] > 1' "$tmp/out" && ok || bad "eval --json is not valid JSON"
# --decode: the same windows scored through the decode step, a token at a time; in fp32 the
# forward's perplexity to float rounding, with int8 weights (whose steps quantise the activations
# too) a cost against fp32's steps that is said and small
cp "$tmp/out" "$tmp/forward.json"
expect_ok "eval --decode" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a/val.bin" --json --stride 8 --decode
python3 - "$tmp/forward.json" "$tmp/out" <<'PY' && ok || bad "eval --decode: not the forward's perplexity"
import json, sys
f, d = (json.load(open(p)) for p in sys.argv[1:])
assert d["scored_by"] == "decode" and f["scored_by"] == "forward" and d["scored"] == f["scored"], (f, d)
assert abs(d["loss"] / f["loss"] - 1) < 1e-5, (f["loss"], d["loss"])
PY
expect_ok "eval --decode --weights int8" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a/val.bin" --decode --weights int8
grep -q "scored through the decode step" "$tmp/out" && grep -Eq "weights int8: perplexity .* in fp32 \([+-]0\.[0-9]+%\)" "$tmp/out" \
    && ok || bad "eval --decode --weights int8: $(cat "$tmp/out")"
expect_error "eval --decode with a task" "are for --data and --text" $B/eval --model "$tmp/good.ckpt" --decode \
    --pairs "$tmp/none.jsonl"
expect_ok "sample" $B/sample --model "$tmp/good.ckpt" --prompt "The whale" --tokens 40 --top-k 5
[ "$(head -c 9 "$tmp/out")" = "The whale" ] && ok || bad "sample did not echo its prompt"
# --num-samples: 3 samples decoded together (40 tokens: refills of the 16-position
# context on the way), each the text --seed S + i gives alone, byte for byte.
for w in fp32 int8; do
    expect_ok "sample --num-samples 3 --weights $w" $B/sample --model "$tmp/good.ckpt" --prompt "The whale" --tokens 40 \
        --num-samples 3 --seed 7 --weights $w --timing
    cp "$tmp/out" "$tmp/batch"
    grep -q "prefill 9 tokens .* decode 40 steps x 3 samples .* weights $w" "$tmp/err" && ok || bad "sample --timing: $(cat "$tmp/err")"
    for i in 0 1 2; do
        $B/sample --model "$tmp/good.ckpt" --prompt "The whale" --tokens 40 --seed $((7 + i)) --weights $w >"$tmp/alone$i"
    done
    python3 - "$tmp" <<'PY' && ok || bad "sample --num-samples 3 --weights $w: a sample differs from its seed's alone"
import sys
t = sys.argv[1]
parts = open(f"{t}/batch").read().split("--- sample ")[1:]
assert len(parts) == 3
for i, p in enumerate(parts):
    head, body = p.split("\n", 1)
    assert head == str(i + 1) and body == open(f"{t}/alone{i}").read(), i
PY
done
expect_error "sample bad weights" "must be fp32, bf16 or int8" $B/sample --model "$tmp/good.ckpt" --weights int4
# the prompt from a text file, newline and all, through the model's tokenizer: the same as given inline
printf 'The whale,\nthe' >"$tmp/prompt.txt"
expect_ok "sample --prompt-file" $B/sample --model "$tmp/good.ckpt" --prompt-file "$tmp/prompt.txt" --tokens 20 --seed 4
cp "$tmp/out" "$tmp/from_file.out"
expect_ok "sample the same prompt inline" $B/sample --model "$tmp/good.ckpt" --prompt "$(printf 'The whale,\nthe')" --tokens 20 --seed 4
cmp -s "$tmp/out" "$tmp/from_file.out" && [ "$(head -c 14 "$tmp/out")" = "$(printf 'The whale,\nthe')" ] && ok \
    || bad "sample --prompt-file differs from the same prompt inline"
expect_error "sample --prompt and --prompt-file" "cannot be used together" \
    $B/sample --model "$tmp/good.ckpt" --prompt x --prompt-file "$tmp/prompt.txt"
expect_error "sample --prompt-file missing" "cannot open" $B/sample --model "$tmp/good.ckpt" --prompt-file "$tmp/none.txt"
# Sampling options. The defaults spelled out draw what no option draws; top-p 0 and min-p 1 keep the
# most likely token alone: greedy; a strong repetition penalty changes greedy text.
S=(--model "$tmp/good.ckpt" --prompt "The whale" --tokens 60 --seed 5)
$B/sample "${S[@]}" >"$tmp/plain"
expect_ok "sample, the defaults spelled out" $B/sample "${S[@]}" --top-p 1 --min-p 0 --repeat-penalty 1 --repeat-last-n 64
cmp -s "$tmp/out" "$tmp/plain" && ok || bad "sample: the default options spelled out draw other text"
$B/sample "${S[@]}" --temperature 0 >"$tmp/greedy"
for o in "--top-p 0" "--min-p 1"; do
    expect_ok "sample $o" $B/sample "${S[@]}" $o
    cmp -s "$tmp/out" "$tmp/greedy" && ok || bad "sample $o is not greedy"
done
expect_ok "sample --repeat-penalty" $B/sample "${S[@]}" --temperature 0 --repeat-penalty 3
cmp -s "$tmp/out" "$tmp/greedy" && bad "sample --repeat-penalty 3 changes no greedy token" || ok
# --stop: the text is the plain text up to the first place either stop string begins (left out); the
# batch's samples each stop alone, each the text its seed gives alone.
stop=$(/usr/bin/python3 -c 'import sys; print(open(sys.argv[1]).read()[9:][30:33], end="")' "$tmp/plain")
expect_ok "sample --stop" $B/sample "${S[@]}" --stop "$stop" --stop "never written"
/usr/bin/python3 - "$tmp/plain" "$tmp/out" "$stop" <<'PY' && ok || bad "sample --stop '$stop': not the text up to it"
import sys
plain, got, stop = open(sys.argv[1]).read()[:-1], open(sys.argv[2]).read(), sys.argv[3]
assert len(stop) == 3 and got == plain[:plain.index(stop, 9)] + "\n", (plain, got, stop)
PY
expect_ok "sample --stop --num-samples 3" $B/sample "${S[@]}" --stop "$stop" --num-samples 3
cp "$tmp/out" "$tmp/batch"
for i in 0 1 2; do $B/sample "${S[@]:0:6}" --seed $((5 + i)) --stop "$stop" >"$tmp/alone$i"; done
/usr/bin/python3 - "$tmp" <<'PY' && ok || bad "sample --stop --num-samples 3: a sample differs from its seed's alone"
import sys
t = sys.argv[1]
parts = open(f"{t}/batch").read().split("--- sample ")[1:]
assert len(parts) == 3
for i, p in enumerate(parts):
    head, body = p.split("\n", 1)
    assert head == str(i + 1) and body == open(f"{t}/alone{i}").read(), i
PY
expect_error "sample --top-p out of range" "--top-p: 1.5 is out of range" $B/sample "${S[@]}" --top-p 1.5
expect_error "sample --repeat-penalty 0" "--repeat-penalty: 0 is out of range" $B/sample "${S[@]}" --repeat-penalty 0
expect_error "sample empty --stop" "--stop needs a text" $B/sample "${S[@]}" --stop ""

# resume == uninterrupted, digit for digit, with and without dropout
for drop in 0 0.1; do
    for mixer in attention grassmann; do
        args=(--data "$tmp/a" "${SMALL[@]}" --max-iters 24 --eval-interval 8 --dropout "$drop" --mixer "$mixer" --grassmann-windows 1,2,4)
        $B/train "${args[@]}" --out "$tmp/full.ckpt" --log "$tmp/full.csv" >/dev/null 2>&1
        $B/train "${args[@]}" --out "$tmp/half.ckpt" --log "$tmp/half.csv" --stop-at 11 >/dev/null 2>&1
        $B/train --data "$tmp/a" --out "$tmp/half.ckpt" --resume "$tmp/half.ckpt" --log "$tmp/half.csv" >/dev/null 2>&1
        if cmp -s "$tmp/full.ckpt" "$tmp/half.ckpt" && diff -q <(cut -d, -f1-5 "$tmp/full.csv") <(cut -d, -f1-5 "$tmp/half.csv") >/dev/null; then ok
        else bad "resume ($mixer, dropout $drop) differs from the uninterrupted run"; fi
    done
done

# --precision: a bad value, and bf16 where the CPU has AVX512_BF16 (else one line, exit 2).
expect_error "train precision value" "--precision must be fp32 or bf16 .got 'fp16'." $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --precision fp16
if grep -qw avx512_bf16 /proc/cpuinfo; then
    # resume == uninterrupted in bf16 too, and 1 thread == 2 threads, byte for byte
    for mixer in attention grassmann; do
        args=(--data "$tmp/a" "${SMALL[@]}" --max-iters 12 --eval-interval 4 --dropout 0.1 --mixer "$mixer" --grassmann-windows 1,2,4 --precision bf16)
        $B/train "${args[@]}" --out "$tmp/bf.ckpt" --threads 2 >"$tmp/out" 2>&1
        $B/train "${args[@]}" --out "$tmp/bf1.ckpt" --threads 1 >/dev/null 2>&1
        $B/train "${args[@]}" --out "$tmp/bfh.ckpt" --stop-at 5 >/dev/null 2>&1
        $B/train --data "$tmp/a" --out "$tmp/bfh.ckpt" --resume "$tmp/bfh.ckpt" >/dev/null 2>&1
        grep -q "^precision: bf16 products, fp32 accumulation" "$tmp/out" && ok || bad "bf16 start-up line: $(grep '^precision' "$tmp/out")"
        cmp -s "$tmp/bf.ckpt" "$tmp/bfh.ckpt" && ok || bad "bf16 resume ($mixer) differs from the uninterrupted run"
        cmp -s "$tmp/bf.ckpt" "$tmp/bf1.ckpt" && ok || bad "bf16 ($mixer) on 1 thread differs from 2 threads"
    done
    cmp -s "$tmp/bf.ckpt" "$tmp/full.ckpt" && bad "bf16 wrote the fp32 run's bytes" || ok
    # the memory check before allocating counts the bf16 weights and operand scratch
    expect_error "larger than memory (bf16)" "needs [0-9.]+ GiB .*bf16 weights and operands.* but [0-9.]+ GiB are available" \
        $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --n-layer 8 --n-head 8 --n-embd 512 --block-size 1024 --batch-size 512 --precision bf16
    python3 -c 'import json,struct,sys
f = open(sys.argv[1], "rb"); h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
assert json.loads(h["__metadata__"]["train"])["precision"] == "bf16"' "$tmp/bf.ckpt" && ok || bad "bf16 is not recorded in the checkpoint"
    python3 -c 'import json,struct,sys
f = open(sys.argv[1], "rb"); h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
assert "precision" not in json.loads(h["__metadata__"]["train"])' "$tmp/full.ckpt" && ok || bad "an fp32 checkpoint names its precision"
    expect_error "resume bf16 as fp32" "--precision fp32 differs from the run's bf16" $B/train --data "$tmp/a" --out "$tmp/bf.ckpt" --resume "$tmp/bf.ckpt" --precision fp32
    expect_error "resume fp32 as bf16" "--precision bf16 differs from the run's fp32" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" --resume "$tmp/good.ckpt" --precision bf16
    expect_ok "eval a bf16 checkpoint" $B/eval --model "$tmp/bf.ckpt" --data "$tmp/a/val.bin" --stride 8
else
    expect_error "train bf16 without AVX512_BF16" "AVX512_BF16" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --precision bf16
fi
# The same refusal on any CPU: LM_TEST_CPU_HIDE (lm/cpu.h) makes
# detection report AVX512_BF16 absent. One line, exit 2, nothing written; a
# bf16 run's resume is refused alike and its checkpoint left as it was; fp32
# training, eval and sampling run.
NOBF16=(env LM_TEST_CPU_HIDE=avx512bf16)
rm -f "$tmp/hidden.ckpt"
expect_error "train bf16, AVX512_BF16 hidden" "^train: error: --precision bf16 needs a CPU with AVX512_BF16, which this one lacks \\(use fp32\\)$" \
    "${NOBF16[@]}" $B/train --data "$tmp/a" --out "$tmp/hidden.ckpt" "${SMALL[@]}" --max-iters 2 --precision bf16
[ ! -e "$tmp/hidden.ckpt" ] && ok || bad "a refused bf16 run wrote its checkpoint"
expect_ok "train fp32, AVX512_BF16 hidden" "${NOBF16[@]}" $B/train --data "$tmp/a" --out "$tmp/hidden.ckpt" "${SMALL[@]}" --max-iters 2
if grep -qw avx512_bf16 /proc/cpuinfo; then
    cp "$tmp/bf.ckpt" "$tmp/bf_kept.ckpt"
    expect_error "resume bf16, AVX512_BF16 hidden" "^train: error: --precision bf16 needs a CPU with AVX512_BF16" \
        "${NOBF16[@]}" $B/train --data "$tmp/a" --out "$tmp/bf.ckpt" --resume "$tmp/bf.ckpt" --max-iters 20
    cmp -s "$tmp/bf.ckpt" "$tmp/bf_kept.ckpt" && ok || bad "a refused bf16 resume changed its checkpoint"
    expect_ok "eval a bf16 checkpoint, AVX512_BF16 hidden" "${NOBF16[@]}" $B/eval --model "$tmp/bf.ckpt" --data "$tmp/a/val.bin" --stride 8
fi

# The log's validation bits per byte: ASCII characters are one byte each, so
# with the char tokenizer it is the loss in bits.
$B/train --data "$tmp/a" --out "$tmp/bpb.ckpt" "${SMALL[@]}" --max-iters 4 --eval-interval 2 --log "$tmp/bpb.csv" >/dev/null 2>&1
python3 -c 'import csv,math,sys
rows=[r for r in csv.DictReader(open(sys.argv[1])) if r["val_loss"]]
assert len(rows)==3 and all(abs(float(r["val_bits_per_byte"])-float(r["val_loss"])/math.log(2))<1e-4 for r in rows)' "$tmp/bpb.csv" \
    && ok || bad "val_bits_per_byte is not the char model's loss in bits: $(head -3 "$tmp/bpb.csv")"

# Gradient accumulation: two micro-batches of 4 draw the same 8 sequences as
# one batch of 8, so the runs agree up to float summation order.
ACC=(--data "$tmp/a" --n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --max-iters 6 --eval-interval 0 --eval-iters 1)
$B/train "${ACC[@]}" --batch-size 8 --out "$tmp/acc1.ckpt" >/dev/null 2>&1
$B/train "${ACC[@]}" --batch-size 4 --grad-accum 2 --out "$tmp/acc2.ckpt" >/dev/null 2>&1
l1=$($B/eval --model "$tmp/acc1.ckpt" --data "$tmp/a" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
l2=$($B/eval --model "$tmp/acc2.ckpt" --data "$tmp/a" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["loss"])')
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-4*abs(a) and a != 0 else 1)" "$l1" "$l2" \
    && ok || bad "--grad-accum 2 x batch 4 ($l2) differs from batch 8 ($l1)"

# Ctrl-C saves a checkpoint that resumes
$B/train --data "$tmp/a" --out "$tmp/int.ckpt" "${SMALL[@]}" --max-iters 1000000 --eval-interval 0 >"$tmp/int.out" 2>&1 &
pid=$!
for _ in $(seq 1 50); do grep -q "^step" "$tmp/int.out" && break; sleep 0.1; done
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && grep -q "interrupted: checkpoint at step" "$tmp/int.out" && [ -s "$tmp/int.ckpt" ]; then ok
else bad "Ctrl-C: exit $rc, $(tail -1 "$tmp/int.out")"; fi
at=$(sed -n 's/^interrupted: checkpoint at step \([0-9]*\).*/\1/p' "$tmp/int.out")
expect_ok "resume after Ctrl-C" $B/train --data "$tmp/a" --out "$tmp/int2.ckpt" --resume "$tmp/int.ckpt" --stop-at $((at + 3))
grep -q "steps $at\.\.$((at + 3)) of 1000000" "$tmp/out" && ok || bad "resume after Ctrl-C did not start at step $at"

# A diverging run (an infinite weight) stops, says so, and keeps the last good checkpoint.
python3 -m tests.tools.ckpt_poison "$tmp/good.ckpt" "$tmp/inf.ckpt"
cp "$tmp/good.ckpt" "$tmp/keep.ckpt"
$B/train --data "$tmp/a" --out "$tmp/keep.ckpt" --resume "$tmp/inf.ckpt" --max-iters 20 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "diverged" "$tmp/err" && cmp -s "$tmp/keep.ckpt" "$tmp/good.ckpt"; then ok
else bad "NaN/Inf loss: exit $rc, $(cat "$tmp/err")"; fi

# bin/gemm-rate (make bench's sgemm rate): bad products, and a real timing.
if $B/gemm-rate --help | grep -q "usage: bin/gemm-rate"; then ok; else bad "gemm-rate --help"; fi
expect_error "gemm-rate no products" "no products" $B/gemm-rate
expect_error "gemm-rate two sizes" "three sizes" $B/gemm-rate 10x10:NT
expect_error "gemm-rate form" "form must be" $B/gemm-rate 10x10x10:XY
expect_error "gemm-rate zero" "zero size" $B/gemm-rate 0x10x10:NN
expect_error "gemm-rate huge" "too large" $B/gemm-rate 1000000x1000000x1:NN
expect_error "gemm-rate count" "zero count" $B/gemm-rate 10x10x10:TN:0
if $B/gemm-rate --ms 5 --json 64x48x32:NT:2 40x30x20:TN >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] \
    && /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); p=r["products"]
assert len(p)==2 and p[0]["count"]==2 and p[1]["form"]=="TN" and all(x["gflops"]>0 and x["seconds"]>0 for x in p)
assert abs(r["total_flop"]-(2*2*64*48*32+2*40*30*20))<1 and r["gflops"]>0 and "kernel" in r["blas"]' "$tmp/out"; then ok
else bad "gemm-rate --json: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
# --bf16: a table where the CPU has AVX512_BF16, else one line and exit 2 (never emulated).
if grep -qw avx512_bf16 /proc/cpuinfo; then
    if $B/gemm-rate --ms 5 --bf16 64x48x32:NT 40x30x20:TN >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] \
        && grep -q "oneDNN" "$tmp/out" && [ "$(grep -cE '^(64x48x32 +NT|40x30x20 +TN) ' "$tmp/out")" -eq 2 ]; then ok
    else bad "gemm-rate --bf16: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
else
    expect_error "gemm-rate --bf16 without AVX512_BF16" "AVX512_BF16" $B/gemm-rate --ms 5 --bf16 64x48x32:NT
fi
# LM_MAX_ISA (lm/cpu.h): a level the CPU lacks (AVX-512 hidden, so on any
# CPU) or a name that is no level is refused in one line, exit 2, never
# SIGILL; an empty one counts as unset; the portable cap runs, says so in
# the start-up line, and trains to the loss of the best level (within the
# portable kernel's separate roundings: the same 4 digits).
expect_error "LM_MAX_ISA=avx512, AVX-512 hidden" "^train: error: LM_MAX_ISA=avx512: this CPU does not run it \\(its best level is (portable|avx2)\\)$" \
    env LM_TEST_CPU_HIDE=avx512f LM_MAX_ISA=avx512 $B/train --data "$tmp/a" --out "$tmp/isa.ckpt" "${SMALL[@]}" --max-iters 2
expect_error "LM_MAX_ISA=sse" "^gemm-rate: error: LM_MAX_ISA=sse: not a level \\(portable, avx2, avx512 or neon\\)$" \
    env LM_MAX_ISA=sse $B/gemm-rate --ms 5 64x48x32:NN
# another architecture's level (neon is ARM64's; tests/builds/arm64_test.sh refuses avx2 there)
if [ "$(uname -m)" = x86_64 ]; then
    expect_error "LM_MAX_ISA=neon on x86-64" "^gemm-rate: error: LM_MAX_ISA=neon: this CPU does not run it \\(its best level is (portable|avx2|avx512)\\)$" \
        env LM_MAX_ISA=neon $B/gemm-rate --ms 5 64x48x32:NN
fi
[ "$($B/gemm-rate --isa-levels | head -1)" = portable ] && [ "$(LM_MAX_ISA= $B/gemm-rate --isa-levels)" = "$($B/gemm-rate --isa-levels)" ] \
    && ok || bad "gemm-rate --isa-levels: $($B/gemm-rate --isa-levels 2>&1 | tr '\n' ' ')"
best_isa=$($B/gemm-rate --isa-levels | tail -1)
expect_ok "train at the best level" $B/train --data "$tmp/a" --out "$tmp/isa_best.ckpt" "${SMALL[@]}" --max-iters 6
grep -q "^blas: .* | isa $best_isa\$" "$tmp/out" && ok || bad "the start-up line does not name isa $best_isa: $(grep '^blas:' "$tmp/out")"
loss_best=$(sed -n 's/^step  *6\/6 | loss \([0-9.]*\) .*/\1/p' "$tmp/out")
expect_ok "train at LM_MAX_ISA=portable" env LM_MAX_ISA=portable $B/train --data "$tmp/a" --out "$tmp/isa_portable.ckpt" "${SMALL[@]}" --max-iters 6
if [ "$best_isa" = portable ]; then grep -q "^blas: .* | isa portable\$" "$tmp/out"
else grep -q "^blas: .* | isa portable (LM_MAX_ISA; this CPU has $best_isa)\$" "$tmp/out"; fi && ok \
    || bad "LM_MAX_ISA=portable: the start-up line says $(grep '^blas:' "$tmp/out")"
loss_portable=$(sed -n 's/^step  *6\/6 | loss \([0-9.]*\) .*/\1/p' "$tmp/out")
[ -n "$loss_best" ] && [ "$loss_best" = "$loss_portable" ] && ok || bad "loss at $best_isa '$loss_best', portable '$loss_portable'"
if $B/gemm-rate --tile --ms 5 64x48x32:NN 40x30x20:TN >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] \
    && grep -q "^tile kernel (isa $best_isa) against" "$tmp/out" && [ "$(grep -cE '^(64x48x32 +NN|40x30x20 +TN) ' "$tmp/out")" -eq 2 ]; then ok
else bad "gemm-rate --tile: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
expect_error "gemm-rate --tile NT" "^gemm-rate: error: --tile times NN and TN products" $B/gemm-rate --tile --ms 5 64x48x32:NT
# ... and with AVX512_BF16 hidden (LM_TEST_CPU_HIDE): --bf16 and --bf16 --json refused in one line;
# the fp32 products still timed
expect_error "gemm-rate --bf16, AVX512_BF16 hidden" "^gemm-rate: error: --bf16: this CPU has no AVX512_BF16" \
    env LM_TEST_CPU_HIDE=avx512bf16 $B/gemm-rate --ms 5 --bf16 64x48x32:NT
expect_error "gemm-rate --bf16 --json, AVX512_BF16 hidden" "AVX512_BF16" \
    env LM_TEST_CPU_HIDE=avx512bf16 $B/gemm-rate --ms 5 --bf16 --json 64x48x32:NT
if LM_TEST_CPU_HIDE=avx512bf16 $B/gemm-rate --ms 5 --threads 1 64x48x32:NT >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] \
    && grep -qE '^64x48x32 +NT ' "$tmp/out"; then ok
else bad "gemm-rate (fp32), AVX512_BF16 hidden: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
if grep -qw avx512_bf16 /proc/cpuinfo; then  # --bf16 --json: make bench's bf16 rate, TN taken at C += A B
    if $B/gemm-rate --ms 5 --bf16 --json 64x48x32:NT:2 40x30x20:TN >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] \
        && python3 -c 'import json,sys
o = json.load(open(sys.argv[1])); p = o["products"]
assert [(x["m"], x["form"], x["count"]) for x in p] == [(64, "NT", 2), (40, "TN", 1)]
f = [2 * x["m"] * x["n"] * x["k"] for x in p]
t16 = 2 * f[0] / p[0]["bf16_gflops"] + f[1] / p[1]["bf16_acc_gflops"]
t32 = 2 * f[0] / p[0]["fp32_gflops"] + f[1] / p[1]["fp32_gflops"]
assert abs(o["gflops"] / ((2 * f[0] + f[1]) / t16) - 1) < 1e-3 and abs(o["fp32_gflops"] / ((2 * f[0] + f[1]) / t32) - 1) < 1e-3
assert "oneDNN" in o["bf16"] and o["threads"] >= 1' "$tmp/out"; then ok
    else bad "gemm-rate --bf16 --json: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
fi

# BLAS kernels, for the library this build links (BLIS or OpenBLAS, from the
# start-up line). This CPU's library may already choose its best kernels, so
# LM_TEST_BLAS_CORENAME pretends it chose slow ones (BLIS's generic,
# OpenBLAS's Prescott): bin/train must probe, restart itself with faster
# kernels and train as before; with a failing or crashing probe it keeps the
# library's choice with one line saying why. The library's selecting
# variable (BLIS_ARCH_TYPE, OPENBLAS_CORETYPE) from the environment is never
# overridden: where it is set, these tests check that it is kept whatever
# the hooks pretend.
BLAS_RUN=(--data "$tmp/a" "${SMALL[@]}" --max-iters 3 --warmup-iters 1 --eval-interval 0 --out "$tmp/blas.ckpt")
$B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
if grep -q '^blas: OpenBLAS ' "$tmp/out"; then
    LIB=OpenBLAS VAR=OPENBLAS_CORETYPE SLOW=Prescott AVX2=Haswell KIND=core
else
    LIB=BLIS VAR=BLIS_ARCH_TYPE SLOW=generic AVX2=haswell KIND=configuration
fi
kernel_in() { sed -n 's/^blas: '"$LIB"'.*, kernel \([A-Za-z0-9_]*\) .*/\1/p' "$1"; }
blas_stderr_lines() { grep -c '^blas:' "$tmp/err"; }
cpu_has() { for f in "$@"; do grep -qw "$f" /proc/cpuinfo || return 1; done; }
if $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err" && [ "$(blas_stderr_lines)" -eq 0 ] && [ -n "$(kernel_in "$tmp/out")" ]; then ok
else bad "blas: the default run failed, printed on stderr or named no kernel: $(head -c 300 "$tmp/err")"; fi
own=$(kernel_in "$tmp/out")
best=$($B/gemm-rate --best-core)
cp "$tmp/out" "$tmp/blas_default_out"
cp "$tmp/blas.ckpt" "$tmp/blas_own.ckpt"
$B/eval --model "$tmp/blas_own.ckpt" --data "$tmp/a" --json >"$tmp/eval_own" 2>/dev/null
if [ -n "${!VAR:-}" ]; then
    # Pinned: the start-up line names it; pretending the library chose
    # slow kernels, or a failing or crashing probe, changes nothing.
    if grep -q "^blas: .*kernel [A-Za-z0-9_]* (set by $VAR" "$tmp/out"; then ok
    else bad "blas: pinned by the environment, the start-up line does not say so: $(grep '^blas:' "$tmp/out")"; fi
    for hook in "" fail crash; do
        LM_TEST_BLAS_CORENAME=$SLOW LM_TEST_BLAS_PROBE=$hook $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ $rc -eq 0 ] && [ "$(kernel_in "$tmp/out")" = "$own" ] && [ "$(blas_stderr_lines)" -eq 0 ] \
            && grep -q "(set by $VAR" "$tmp/out" && cmp -s "$tmp/blas.ckpt" "$tmp/blas_own.ckpt"; then ok
        else bad "blas: pinned, pretending $SLOW (probe '$hook') changed something: exit $rc, $(grep '^blas:' "$tmp/out" "$tmp/err")"; fi
    done
elif cpu_has avx; then
    # On this CPU the library may itself choose too slow kernels (BLIS 0.9
    # runs its portable kernels on CPUs newer than it): then the default run
    # above was already a selection.
    library_choice_is_own=1
    grep -q '(selected: the library chose' "$tmp/blas_default_out" && library_choice_is_own=0
    if LM_TEST_BLAS_CORENAME=$SLOW $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"; then
        chosen=$(kernel_in "$tmp/out")
        if grep -q "^blas: .*(selected: the library chose $SLOW" "$tmp/out" && [ -n "$chosen" ] && [ "$chosen" != "$SLOW" ] \
            && [ "$(blas_stderr_lines)" -eq 0 ]; then ok
        else bad "blas: pretending $SLOW selected nothing faster: $(grep '^blas:' "$tmp/out" "$tmp/err")"; fi
        if [ "$chosen" = "$own" ]; then  # the same kernels after the restart: the same bytes
            cmp -s "$tmp/blas.ckpt" "$tmp/blas_own.ckpt" && ok || bad "blas: the restarted run ($chosen) wrote different bytes"
        fi
    else bad "blas: the run that restarts itself failed: $(tail -c 300 "$tmp/err")"; fi
    LM_TEST_BLAS_CORENAME=$SLOW LM_TEST_BLAS_PROBE=fail $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 0 ] && [ "$(blas_stderr_lines)" -eq 1 ] && [ "$(kernel_in "$tmp/out")" = "$SLOW" ] \
        && grep -q "^blas: kept $LIB's $SLOW kernels: the [A-Za-z0-9]* probe computed wrong results" "$tmp/err"; then ok
    else bad "blas: failing probe: exit $rc, $(grep '^blas:' "$tmp/out" "$tmp/err")"; fi
    if [ $library_choice_is_own -eq 1 ]; then
        cmp -s "$tmp/blas.ckpt" "$tmp/blas_own.ckpt" && ok || bad "blas: the run without restart wrote different bytes"
    fi
    # eval and sample restart silently and compute the same; a crashing probe costs nothing but a line.
    LM_TEST_BLAS_CORENAME=$SLOW $B/eval --model "$tmp/blas_own.ckpt" --data "$tmp/a" --json >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && cmp -s "$tmp/out" "$tmp/eval_own" && ok || bad "blas: eval after a restart: exit $rc, $(head -c 300 "$tmp/err")"
    LM_TEST_BLAS_CORENAME=$SLOW $B/sample --model "$tmp/blas_own.ckpt" --tokens 20 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && ok || bad "blas: sample after a restart: exit $rc, $(head -c 300 "$tmp/err")"
    LM_TEST_BLAS_CORENAME=$SLOW LM_TEST_BLAS_PROBE=crash $B/eval --model "$tmp/blas_own.ckpt" --data "$tmp/a" --json >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^blas: kept $LIB's $SLOW kernels: the [A-Za-z0-9]* probe crashed" "$tmp/err" \
        && { [ $library_choice_is_own -eq 0 ] || cmp -s "$tmp/out" "$tmp/eval_own"; }; then ok
    else bad "blas: crashing probe: exit $rc, $(head -c 300 "$tmp/err")"; fi
    # Set to the kernels that already run, by name in either case (BLIS:
    # also by number): named as the environment's, never probed or
    # replaced, same bytes.
    for pin in "$own" "$(printf %s "$own" | tr a-z A-Z)"; do
        env "$VAR=$pin" LM_TEST_BLAS_CORENAME=$SLOW $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ $rc -eq 0 ] && grep -q "^blas: .*kernel $own (set by $VAR" "$tmp/out" && [ "$(blas_stderr_lines)" -eq 0 ] \
            && cmp -s "$tmp/blas.ckpt" "$tmp/blas_own.ckpt"; then ok
        else bad "blas: $VAR=$pin: exit $rc, $(grep '^blas:' "$tmp/out" "$tmp/err")"; fi
    done
    # A pin to slower kernels is kept and the line names the faster ones.
    if cpu_has avx2 fma && [ "$own" = "$best" ] && [ "$own" != "$AVX2" ] && [ "$own" != zen3 ] && [ "$own" != Zen ]; then
        env "$VAR=$AVX2" $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 0 ] && grep -q "^blas: .*kernel $AVX2 (set by $VAR, kept; this CPU could run $best)" "$tmp/out" \
            && ok || bad "blas: $VAR=$AVX2 on an AVX-512 CPU: exit $rc, $(grep '^blas:' "$tmp/out" "$tmp/err")"
    fi
fi
# An empty selecting variable counts as unset (BLIS 0.9 itself would read it
# as 0, skx; OpenBLAS as a name it does not know).
env "$VAR=" $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(kernel_in "$tmp/out")" = "$own" ] && ! grep -q "set by $VAR" "$tmp/out" \
    && ok || bad "blas: empty $VAR: exit $rc, $(grep '^blas:' "$tmp/out" "$tmp/err")"
# A value that names no kernels of the library (BLIS 0.9 would abort, or read
# a name as 0; OpenBLAS silently runs its own choice) is ignored with one
# line, and the run goes on.
for pin in nosuchcpu 99999 -1; do
    env "$VAR=$pin" $B/eval --model "$tmp/blas_own.ckpt" --data "$tmp/a" --json >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^blas: ignored $VAR=$pin: not a $KIND of this $LIB" "$tmp/err"; then ok
    else bad "blas: $VAR=$pin: exit $rc, $(head -c 300 "$tmp/err")"; fi
done
# The other library's variable concerns a library this build does not link: nothing changes.
[ "$VAR" = BLIS_ARCH_TYPE ] && OTHER=OPENBLAS_CORETYPE || OTHER=BLIS_ARCH_TYPE
env "$OTHER=nosuchcpu" $B/train "${BLAS_RUN[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(kernel_in "$tmp/out")" = "$own" ] && cmp -s "$tmp/blas.ckpt" "$tmp/blas_own.ckpt" \
    && ok || bad "blas: $OTHER set under $LIB: exit $rc, $(grep '^blas:' "$tmp/out" "$tmp/err")"

# ---- bin/eval --by-position, --split-recall, masks (issue 7) ----
# mask_file PATH COUNT BYTE...: an LMMASK file (see lm/token_mask.h).
mask_file() {
    /usr/bin/python3 -c 'import struct,sys; n=int(sys.argv[2]); b=bytes(int(x) for x in sys.argv[3:]); open(sys.argv[1],"wb").write(b"LMMASK\0\0"+struct.pack("<IIQ",1,0,n)+b)' "$@"
}
ntok=$(/usr/bin/python3 -c 'import struct,sys; print(struct.unpack("<Q", open(sys.argv[1],"rb").read()[24:32])[0])' "$tmp/a/val.bin")
expect_error "eval split-recall 0" "at least 1" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --split-recall 0
expect_error "eval split-recall text" "not|number|integer" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --split-recall two
expect_error "eval mask missing" "cannot open|no such" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --mask "$tmp/nope.mask"
expect_error "eval mask not a mask" "not a mask" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --mask "$tmp/a/val.bin"
mask_file "$tmp/short.mask" 3 0 1 1
expect_error "eval mask wrong length" "has 3 entries but .* has $ntok tokens" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --mask "$tmp/short.mask"
mask_file "$tmp/none.mask" "$ntok" $(for i in $(seq 1 "$ntok"); do echo 0; done)
expect_error "eval mask marks nothing" "marks none" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --mask "$tmp/none.mask"
mask_file "$tmp/bad.mask" 2 0 5
expect_error "eval mask bad byte" "only 0 and 1" $B/eval --model "$tmp/good.ckpt" --data "$tmp/a/val.bin" --mask "$tmp/bad.mask"
# A mask beside the token file is used without --mask: here every 2nd token, so half of them are scored.
cp -r "$tmp/a" "$tmp/am"
mask_file "$tmp/am/val.mask" "$ntok" $(for i in $(seq 1 "$ntok"); do echo $((i % 2)); done)
if $B/eval --model "$tmp/good.ckpt" --data "$tmp/am" --json --by-position --split-recall 3 >"$tmp/out" 2>"$tmp/err" &&
    /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert d["scored"] == n // 2, (d["scored"], n)
assert d["mask"].endswith("val.mask") and 0 <= d["accuracy"] <= 1
assert sum(d["by_position"]["count"]) == d["scored"] and len(d["by_position"]["loss"]) == d["block_size"]
r = d["split_recall"]; assert r["n"] == 3 and r["recall_tokens"] + r["other_tokens"] == d["scored"]
' "$tmp/out" "$ntok"; then ok; else bad "eval with a mask beside the data: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
if $B/eval --model "$tmp/good.ckpt" --data "$tmp/a" --by-position --split-recall 3 >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^loss by position" "$tmp/out" && grep -q "^  positions     0-0 " "$tmp/out" && grep -q "^recall split (3-grams" "$tmp/out"; then ok
else bad "eval text breakdowns: $(head -c 300 "$tmp/out" "$tmp/err")"; fi
# bin/train --max-seconds (a wall-time budget) and --window-align (issue 7)
expect_error "train max-seconds negative" "range|at least|negative" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --max-seconds -1
expect_error "train max-seconds text" "not a number" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --max-seconds soon
expect_error "train max-seconds resume" "max-seconds cannot be used with --resume" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --resume "$tmp/good.ckpt" --max-seconds 5
expect_error "train window-align text" "not|integer|number" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --window-align x
if $B/train --data "$tmp/a" --out "$tmp/timed.ckpt" "${SMALL[@]}" --max-iters 1000000 --max-seconds 0.5 --log "$tmp/timed.csv" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^time budget: .* reached after step" "$tmp/out" && [ "$(tail -1 "$tmp/timed.csv" | cut -d, -f4)" != "" ] &&
    [ "$(tail -1 "$tmp/timed.csv" | cut -d, -f1)" -lt 1000000 ]; then ok
else bad "train --max-seconds: $(tail -c 300 "$tmp/out" "$tmp/err")"; fi
# Its ETA follows the time budget (0.5 s), not --max-iters (which would say hours).
if grep -q "^step .*ETA" "$tmp/out" && ! grep "^step .*ETA" "$tmp/out" | grep -vqE "ETA [0-9]+s"; then ok
else bad "train --max-seconds ETA: $(grep -m2 '^step' "$tmp/out")"; fi
expect_ok "train window-align" $B/train --data "$tmp/a" --out "$tmp/aligned.ckpt" "${SMALL[@]}" --max-iters 3 --window-align 16
# bin/probegen (issue 7): bad input, and the files it writes line up
expect_error "probegen task" "must be mqar, zoology or copy" $B/probegen --task sort --out "$tmp/pg"
expect_error "probegen no out" "required" $B/probegen --task mqar
expect_error "probegen too many pairs" "distinct keys" $B/probegen --task mqar --out "$tmp/pg" --pairs 70 --symbols 64 --seq-len 512
expect_error "probegen no room" "no room|needs" $B/probegen --task mqar --out "$tmp/pg" --pairs 16 --seq-len 32
expect_error "probegen symbols" "range|at most|too" $B/probegen --task copy --out "$tmp/pg" --symbols 500
expect_error "probegen copy too long" "needs .* tokens" $B/probegen --task copy --out "$tmp/pg" --seq-len 32 --segment 16 --gap 8
expect_error "probegen zero seqs" "positive" $B/probegen --task copy --out "$tmp/pg" --train-seqs 0
if $B/probegen --task mqar --out "$tmp/pg" --seq-len 16 --pairs 2 --symbols 4 --train-seqs 3 --val-seqs 2 >"$tmp/out" 2>"$tmp/err" &&
    /usr/bin/python3 -c '
import struct, sys
d = sys.argv[1]
def toks(name):
    b = open(f"{d}/{name}.bin", "rb").read(); n = struct.unpack("<Q", b[24:32])[0]
    return list(struct.unpack(f"<{n}H", b[32:32 + 2 * n]))
t, m = toks("val"), open(f"{d}/val.mask", "rb").read()[24:]
assert len(t) == 2 * 16 + 1 == len(m) and len(toks("train")) == 3 * 16 + 1
for s in range(2):
    q = t[16 * s:16 * s + 16]; store = dict(zip(q[0:4:2], q[1:4:2]))
    marked = [i for i in range(16) if m[16 * s + i]]
    assert marked == list(range(5, 16, 2)), marked   # 6 queries after 2 pairs
    assert all(q[i] == store[q[i - 1]] for i in marked)
' "$tmp/pg"; then ok; else bad "probegen mqar files: $(head -c 300 "$tmp/err")"; fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
