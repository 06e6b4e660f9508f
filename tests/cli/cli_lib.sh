# Shared by the CLI test scripts (sourced, from the repository root): the
# temporary directory, the pass/fail counters, the expect_* checks and the
# small corpora most of them train on.
B=${BIN:-bin}  # BIN=bin-asan runs the same checks on the sanitizer build
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=2
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_error NAME PATTERN COMMAND...: exit 2, exactly one stderr line, matching PATTERN.
expect_error() {
    local name=$1 pattern=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne 2 ]; then bad "$name: exit $rc, wanted 2 ($(head -c 300 "$tmp/err"))"
    elif [ "$lines" -ne 1 ]; then bad "$name: $lines lines on stderr, wanted 1: $(head -c 300 "$tmp/err")"
    elif ! grep -qiE -e "$pattern" "$tmp/err"; then bad "$name: '$(cat "$tmp/err")' does not match /$pattern/"
    else ok; fi
}

expect_ok() {
    local name=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else bad "$name: exit $? $(tail -c 300 "$tmp/err")"; fi
}

# Two small corpora, $tmp/a.txt and $tmp/b.txt, prepared into $tmp/a and $tmp/b:
# data directories with different tokenizers; and SMALL, a tiny model's options.
small_corpora() {
    for i in $(seq 1 60); do echo "The whale, the whale! Line $i of a small corpus for tests; it repeats."; done >"$tmp/a.txt"
    for i in $(seq 1 60); do echo "Quite different text, $i: zebras & xylophones {}[]"; done >"$tmp/b.txt"
    expect_ok "prepare a" $B/prepare --input "$tmp/a.txt" --out "$tmp/a"
    expect_ok "prepare b" $B/prepare --input "$tmp/b.txt" --out "$tmp/b"
    SMALL=(--n-layer 2 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 2 --log-interval 5)
}

# whale_text: $tmp/a.txt, 120 lines of English with accents, and $tmp/docs/doc{1,2,3}.txt,
# three overlapping documents cut from it (the BPE tests' corpus).
whale_text() {
    local i d
    for i in $(seq 1 120); do
        echo "Line $i: the whale, the WHALE's wake; they'll sail at $((i * 37)) knots -- caf$(printf '\xc3\xa9') na$(printf '\xc3\xaf')ve."
    done >"$tmp/a.txt"
    mkdir -p "$tmp/docs"
    for d in 1 2 3; do sed -n "$((d * 30)),$((d * 30 + 40))p" "$tmp/a.txt" >"$tmp/docs/doc$d.txt"; done
}
