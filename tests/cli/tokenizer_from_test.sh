#!/usr/bin/env bash
# bin/prepare --tokenizer-from from outside: a data directory, its
# tokenizer.txt, the tokenizer.json bin/prepare exported, vocab.json +
# merges.txt made from it and a checkpoint trained on it all give the
# identical tokenizer (the same tokenizer.txt, so the same hash) and the same
# token files as learning it did; char and byte tokenizers come along from
# a data directory; --doc-separator takes one of its specials. Hostile
# input (another kind of tokenizer.json, corrupt JSON, merges naming unknown
# tokens, duplicate, huge or negative ids, vocabulary and merges that
# disagree, a checkpoint whose tokenizer is not its hash's) and the options
# of learning a tokenizer: one line, exit status 2, nothing written.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh

whale_text
SEP="<|endoftext|>"
expect_ok "prepare bpe" $B/prepare --input "$tmp/docs" --out "$tmp/bpe" --tokenizer bpe --vocab-size 400 --doc-separator "$SEP" \
    --split-pattern gpt2 # vocab.json + merges.txt have no pattern: GPT-2's is theirs

# same_as NAME DIR: DIR holds the tokenizer and token files of $tmp/bpe, byte for byte
same_as() {
    local f
    for f in tokenizer.txt tokenizer.json train.bin val.bin test.bin; do
        cmp -s "$tmp/bpe/$f" "$2/$f" || { bad "$1: $f differs from the learned tokenizer's"; return; }
    done
    ok
}
from() { $B/prepare --input "$tmp/docs" --doc-separator "$SEP" --tokenizer-from "$@"; }

# vocab.json + merges.txt of our tokenizer.json, the separator in vocab.json after the merges
mkdir -p "$tmp/hf"
/usr/bin/python3 - "$tmp/bpe/tokenizer.json" "$tmp/hf" <<'PY'
import json, sys
tj = json.load(open(sys.argv[1], encoding="utf-8"))
vocab = dict(tj["model"]["vocab"])
for t in tj["added_tokens"]:
    vocab[t["content"]] = t["id"]
json.dump(vocab, open(sys.argv[2] + "/vocab.json", "w", encoding="utf-8"), ensure_ascii=False)
with open(sys.argv[2] + "/merges.txt", "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in tj["model"]["merges"]))
PY
TINY=(--n-layer 1 --n-head 1 --n-embd 8 --block-size 8 --batch-size 1 --max-iters 1 --eval-iters 1)
expect_ok "train on bpe" $B/train --data "$tmp/bpe" --out "$tmp/bpe.ckpt" "${TINY[@]}"
for src in data-dir tokenizer.txt tokenizer.json vocab-merges checkpoint; do
    case $src in
        data-dir) path=$tmp/bpe ;;
        tokenizer.txt) path=$tmp/bpe/tokenizer.txt ;;
        tokenizer.json) path=$tmp/bpe/tokenizer.json ;;
        vocab-merges) path=$tmp/hf ;;
        checkpoint) path=$tmp/bpe.ckpt ;;
    esac
    expect_ok "--tokenizer-from $src" from "$path" --out "$tmp/from-$src"
    same_as "--tokenizer-from $src" "$tmp/from-$src"
done
grep -q "bpe tokenizer, vocabulary 400, hash $(sed -n 's/.*hash \([0-9a-f]*\);.*/\1/p' "$tmp/out")" "$tmp/out" && ok ||
    bad "the summary line: $(cat "$tmp/out")"
# another text, the same tokenizer: the model trained before takes the new data
expect_ok "another text" $B/prepare --input "$tmp/a.txt" --out "$tmp/other" --tokenizer-from "$tmp/bpe.ckpt"
expect_ok "eval on it" $B/eval --model "$tmp/bpe.ckpt" --data "$tmp/other" --split val

# char and byte tokenizers from a data directory
for kind in char byte; do
    expect_ok "prepare $kind" $B/prepare --input "$tmp/a.txt" --out "$tmp/$kind" --tokenizer "$kind"
    expect_ok "--tokenizer-from a $kind directory" $B/prepare --input "$tmp/a.txt" --out "$tmp/$kind-2" --tokenizer-from "$tmp/$kind"
    cmp -s "$tmp/$kind/tokenizer.txt" "$tmp/$kind-2/tokenizer.txt" && cmp -s "$tmp/$kind/val.bin" "$tmp/$kind-2/val.bin" && ok ||
        bad "--tokenizer-from a $kind directory: not the same files"
done

# Bits per byte from the text itself: a char vocabulary lacking some of the
# text's characters (ASCII letters, a 2- and a 4-byte character, an invalid
# byte) still counts each as the bytes it was; the scored bytes are the val
# text's size less its first character (which nothing predicts).
printf 'Quiz: Zebras \xc3\xb1 \xf0\x9f\x90\x8b \xff the whale.\n%.0s' $(seq 1 20) >"$tmp/oov.txt"
expect_ok "prepare text outside the vocabulary" $B/prepare --train "$tmp/a.txt" --val "$tmp/oov.txt" --test "$tmp/oov.txt" \
    --out "$tmp/oov" --tokenizer-from "$tmp/char"
[ "$(od -An -tu4 -j8 -N4 "$tmp/oov/val.bin" | tr -d ' ')" = 2 ] && [ "$(od -An -tu4 -j8 -N4 "$tmp/oov/train.bin" | tr -d ' ')" = 1 ] &&
    ok || bad "val.bin records its unknown tokens' text (version 2), train.bin has none (version 1)"
expect_ok "train on it" $B/train --data "$tmp/oov" --out "$tmp/oov.ckpt" "${TINY[@]}"
for split in val test; do
    expect_ok "eval $split outside the vocabulary" $B/eval --model "$tmp/oov.ckpt" --data "$tmp/oov" --split $split --json
    want=$(($(wc -c <"$tmp/oov.txt") - 1))
    got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes"])' "$tmp/out")
    [ "$got" = "$want" ] && ok || bad "bits per byte of text outside the vocabulary: $got bytes, the text has $want"
done

# bin/eval --text FILE: the text encoded in memory by the model's own
# tokenizer scores exactly as the token file bin/prepare --tokenizer-from
# makes of it (tokens, loss, bytes; BPE, and char with characters outside its
# vocabulary), and nothing is written: not where it runs, not in TMPDIR, not
# beside the text.
# same_eval NAME JSON1 JSON2: the same tokens, scored, loss and bytes
same_eval() {
    python3 -c 'import json,sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ("tokens", "scored", "loss", "perplexity", "bytes", "bits_per_byte")
sys.exit(0 if all(a[k] == b[k] for k in keys) else 1)' "$2" "$3" && ok || bad "$1: $(cat "$2") against $(cat "$3")"
}
mkdir -p "$tmp/run-here" "$tmp/tmpdir" "$tmp/texts"
ab=$B; case $ab in /*) ;; *) ab=$PWD/$ab ;; esac  # the programs, run from another directory
cp "$tmp/oov.txt" "$tmp/a.txt" "$tmp/texts/"
expect_ok "prepare a.txt as val" $B/prepare --train "$tmp/docs" --val "$tmp/a.txt" --out "$tmp/aval" --tokenizer-from "$tmp/bpe.ckpt"
for m in bpe oov; do
    case $m in bpe) text=a.txt data=$tmp/aval ;; oov) text=oov.txt data=$tmp/oov ;; esac
    (cd "$tmp/run-here" && TMPDIR=$tmp/tmpdir $ab/eval --model "$tmp/$m.ckpt" --text "$tmp/texts/$text" --json \
        >"$tmp/text.json" 2>"$tmp/err") && ok || bad "eval --text ($m): $(cat "$tmp/err")"
    expect_ok "eval the prepared $text ($m)" $B/eval --model "$tmp/$m.ckpt" --data "$data" --split val --json
    same_eval "eval --text ($m) against the prepared file" "$tmp/text.json" "$tmp/out"
done
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes"])' "$tmp/text.json")" = $(($(wc -c <"$tmp/oov.txt") - 1)) ] &&
    ok || bad "eval --text: not the text's bytes: $(cat "$tmp/text.json")"
[ -z "$(find "$tmp/run-here" "$tmp/tmpdir" -mindepth 1)" ] && [ "$(ls -A "$tmp/texts")" = "$(printf 'a.txt\noov.txt')" ] && ok ||
    bad "eval --text left files behind: $(find "$tmp/run-here" "$tmp/tmpdir" "$tmp/texts" -mindepth 1)"
expect_ok "eval --text, as text" $B/eval --model "$tmp/oov.ckpt" --text "$tmp/oov.txt"
grep -q "bits per byte ($(($(wc -c <"$tmp/oov.txt") - 1)) bytes of text)" "$tmp/out" && grep -q "^loss .* | perplexity " "$tmp/out" &&
    ok || bad "eval --text prints no loss, perplexity or bits per byte: $(cat "$tmp/out")"
printf 'Q' >"$tmp/one.txt"
: >"$tmp/empty.txt"
expect_error "eval --text with --data" "--data and --text cannot be used together" $B/eval --model "$tmp/oov.ckpt" --text "$tmp/oov.txt" --data "$tmp/oov"
expect_error "eval --text with --split" "--split and --mask are for --data" $B/eval --model "$tmp/oov.ckpt" --text "$tmp/oov.txt" --split test
expect_error "eval --text missing" "cannot open" $B/eval --model "$tmp/oov.ckpt" --text "$tmp/nothing.txt"
expect_error "eval --text of one character" "is 1 token of the model's tokenizer: scoring needs at least 2" \
    $B/eval --model "$tmp/oov.ckpt" --text "$tmp/one.txt"
expect_error "eval --text empty" "is 0 tokens" $B/eval --model "$tmp/oov.ckpt" --text "$tmp/empty.txt"

# hostile tokenizer.json files, each a spoiled copy of ours
/usr/bin/python3 - "$tmp/bpe/tokenizer.json" "$tmp/hostile" <<'PY'
import json, os, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
base = json.load(open(src, encoding="utf-8"))
def spoil(name, change):
    tj = json.loads(json.dumps(base))
    change(tj)
    json.dump(tj, open(f"{out}/{name}.json", "w", encoding="utf-8"), ensure_ascii=False)
def set_in(path, value):
    def change(tj):
        node = tj
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change
vocab = base["model"]["vocab"]
first = base["model"]["merges"][0]
spoil("wordpiece", set_in(["model", "type"], "WordPiece"))
spoil("unigram", lambda tj: tj.update(model={"type": "Unigram", "unk_id": 0, "vocab": [["a", -1.0]]}))
spoil("prefix-space", set_in(["pre_tokenizer", "pretokenizers", -1, "add_prefix_space"], True))
spoil("nfkc", set_in(["normalizer"], {"type": "NFKC"}))
spoil("bad-regex", set_in(["pre_tokenizer", "pretokenizers", 0, "pattern", "Regex"], "(?<="))
spoil("unknown-token", set_in(["model", "merges", 0], ["zz", "qq"]))
spoil("duplicate-id", lambda tj: tj["model"]["vocab"].update({"dup-token": 300}))
spoil("huge-id", set_in(["model", "vocab", next(iter(vocab))], 2**62))
spoil("negative-id", set_in(["model", "vocab", next(iter(vocab))], -3))
spoil("merges-short", lambda tj: tj["model"]["merges"].pop())          # a token no merge makes
spoil("merges-long", lambda tj: tj["model"]["merges"].append(first))  # more merges than tokens
spoil("merges-order", lambda tj: tj["model"]["merges"].reverse())
spoil("special-in-merges", set_in(["added_tokens", 0, "id"], 300))
open(f"{out}/truncated.json", "w").write(open(src, encoding="utf-8").read()[:5000])
open(f"{out}/not-utf8.json", "wb").write(open(src, "rb").read().replace(b'"version"', b'"vers\xffon"', 1))
open(f"{out}/empty.json", "w").close()
PY
X="$tmp/x"
H=$tmp/hostile
P=(--input "$tmp/docs" --out "$X")
expect_error "another kind: WordPiece" "WordPiece, not BPE" $B/prepare "${P[@]}" --tokenizer-from "$H/wordpiece.json"
expect_error "another kind: Unigram" "Unigram, not BPE" $B/prepare "${P[@]}" --tokenizer-from "$H/unigram.json"
expect_error "a prefix space" "add_prefix_space" $B/prepare "${P[@]}" --tokenizer-from "$H/prefix-space.json"
expect_error "a normalizer" "normalizer NFKC" $B/prepare "${P[@]}" --tokenizer-from "$H/nfkc.json"
expect_error "a regex PCRE2 cannot compile" "bad split regex" $B/prepare "${P[@]}" --tokenizer-from "$H/bad-regex.json"
expect_error "a merge of unknown tokens" "'zz' is not in the vocabulary" $B/prepare "${P[@]}" --tokenizer-from "$H/unknown-token.json"
expect_error "duplicate ids" "both have id 300" $B/prepare "${P[@]}" --tokenizer-from "$H/duplicate-id.json"
expect_error "a huge id" "has id 4611686018427387904, outside" $B/prepare "${P[@]}" --tokenizer-from "$H/huge-id.json"
expect_error "a negative id" "has id -3, outside" $B/prepare "${P[@]}" --tokenizer-from "$H/negative-id.json"
expect_error "a merge missing" "follows the last of the [0-9]+ merges but is not an added token" $B/prepare "${P[@]}" --tokenizer-from "$H/merges-short.json"
expect_error "a merge too many" "disagree" $B/prepare "${P[@]}" --tokenizer-from "$H/merges-long.json"
expect_error "merges out of order" "rank order|not 256" $B/prepare "${P[@]}" --tokenizer-from "$H/merges-order.json"
expect_error "a special among the merges" "among the bytes and merges" $B/prepare "${P[@]}" --tokenizer-from "$H/special-in-merges.json"
expect_error "truncated JSON" "invalid JSON" $B/prepare "${P[@]}" --tokenizer-from "$H/truncated.json"
expect_error "invalid UTF-8" "invalid JSON" $B/prepare "${P[@]}" --tokenizer-from "$H/not-utf8.json"
expect_error "an empty file" "neither a tokenizer.txt nor a tokenizer.json" $B/prepare "${P[@]}" --tokenizer-from "$H/empty.json"
expect_error "a text file" "neither a tokenizer.txt nor a tokenizer.json" $B/prepare "${P[@]}" --tokenizer-from "$tmp/a.txt"
expect_error "a missing path" "cannot open" $B/prepare "${P[@]}" --tokenizer-from "$tmp/nothing-here"
mkdir -p "$tmp/empty-dir"
expect_error "a directory without a tokenizer" "holds no tokenizer" $B/prepare "${P[@]}" --tokenizer-from "$tmp/empty-dir"
# vocab.json + merges.txt that disagree: merges.txt cut short leaves byte-level tokens after the merges
mkdir -p "$tmp/hf-short"
cp "$tmp/hf/vocab.json" "$tmp/hf-short/"
head -n -20 "$tmp/hf/merges.txt" >"$tmp/hf-short/merges.txt"
expect_error "merges.txt cut short" "follows the last of the [0-9]+ merges but (joins|is spelled as byte-level)" $B/prepare "${P[@]}" --tokenizer-from "$tmp/hf-short"
printf '[1, 2]' >"$tmp/hf-short/vocab.json"
expect_error "vocab.json not an object" "vocab.json is not an object" $B/prepare "${P[@]}" --tokenizer-from "$tmp/hf-short"
/usr/bin/python3 -m tests.tools.ckpt_forge tokenizer "$tmp/bpe.ckpt" "$tmp/forged.ckpt"
expect_error "a checkpoint's tokenizer not its hash's" "does not match its hash" $B/prepare "${P[@]}" --tokenizer-from "$tmp/forged.ckpt"
head -c 100 "$tmp/bpe.ckpt" >"$tmp/cut.ckpt"
expect_error "a checkpoint cut short" "cut.ckpt" $B/prepare "${P[@]}" --tokenizer-from "$tmp/cut.ckpt"
# the options of learning a tokenizer, and a separator it does not have
for opt in "--tokenizer bpe" "--vocab-size 500" "--split-pattern gpt2" "--special <s>"; do
    expect_error "--tokenizer-from with $opt" "for learning one" $B/prepare "${P[@]}" --tokenizer-from "$tmp/bpe" $opt
done
expect_error "a separator that is not a special" "not a special token" $B/prepare "${P[@]}" --tokenizer-from "$tmp/bpe" \
    --doc-separator "<|sep|>"
expect_error "a char tokenizer has no specials" "not a special token" $B/prepare "${P[@]}" --tokenizer-from "$tmp/char" \
    --doc-separator "x"
[ ! -e "$X" ] && ok || bad "a refused --tokenizer-from left $X behind"

echo "tokenizer_from_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
