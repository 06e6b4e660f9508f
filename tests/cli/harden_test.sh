#!/usr/bin/env bash
# The programs against a hostile user, second pass: a link planted where a
# temporary goes is never written through; checkpoint headers that lie about
# their step or data position, overlap tensors or trail bytes are refused;
# a 10 MB token in a vocabulary is refused at once and a long one checked in
# linear time; FIFOs and pipes given as input files are refused, never
# waited on; an address-space limit too small for OpenBLAS is said in one
# line, not hung on; two runs on one --out refuse each other; what killed
# runs left is removed; and the small refusals (a special token that is not
# UTF-8, --tokens 0, a window list naming an offset twice, --induction-length
# 0, a path longer than the buffers). Every refusal: one line, exit 2.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora

small_corpora  # a.txt, b.txt, a, b, SMALL
expect_ok "train" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" "${SMALL[@]}" --max-iters 4
forge() { /usr/bin/python3 -m tests.tools.ckpt_forge "$@"; }
asan=0
case "$B" in *asan*) asan=1 ;; esac

# ---- a link planted at the temporary's name -----------------------------------
# exec keeps the shell's pid, so the link sits where the program's temporary goes.
mkdir -p "$tmp/plant"
echo "precious" >"$tmp/victim.txt"
expect_ok "train with a link planted at its temporary" bash -c 'ln -s "$1" "$2.tmp.$$"; shift 2; exec "$@"' _ \
    "$tmp/victim.txt" "$tmp/plant/out.ckpt" $B/train --data "$tmp/a" --out "$tmp/plant/out.ckpt" "${SMALL[@]}" --max-iters 2
[ "$(cat "$tmp/victim.txt")" = "precious" ] && ok || bad "planted link: the file it points to was overwritten"
[ -f "$tmp/plant/out.ckpt" ] && [ ! -L "$tmp/plant/out.ckpt" ] && ok || bad "planted link: out.ckpt is not a regular file"
expect_ok "the checkpoint written past the link loads" $B/sample --model "$tmp/plant/out.ckpt" --tokens 3
[ "$(stat -c %a "$tmp/plant/out.ckpt")" = "$(printf '%o' $((0666 & ~$(umask))))" ] && ok \
    || bad "checkpoint mode $(stat -c %a "$tmp/plant/out.ckpt"), not 0666 less the umask $(umask)"
expect_ok "prepare with a link planted at its temporary" bash -c 'ln -s "$1" "$2.tmp.$$"; shift 2; exec "$@"' _ \
    "$tmp/victim.txt" "$tmp/plant/d/train.bin" $B/prepare --input "$tmp/a.txt" --out "$tmp/plant/d"
[ "$(cat "$tmp/victim.txt")" = "precious" ] && [ ! -L "$tmp/plant/d/train.bin" ] && ok \
    || bad "planted link at a token file's temporary: written through"

# ---- checkpoint headers that lie (checksums recomputed) --------------------------
cp "$tmp/good.ckpt" "$tmp/good.copy"
for lie in "step=abc" "step=-1" "step=99999999999999999999" "step=18446744073709551615" "step=" "data_rng=abc" \
    "data_rng=-5" "data_rng=1e3"; do
    forge "meta:$lie" "$tmp/good.ckpt" "$tmp/lie.ckpt"
    expect_error "resume from a header with $lie" "is corrupt: (step|data_rng)" \
        $B/train --data "$tmp/a" --out "$tmp/lie-out.ckpt" --resume "$tmp/lie.ckpt"
done
[ ! -e "$tmp/lie-out.ckpt" ] && ok || bad "a lying header's resume wrote a checkpoint"
forge overlap "$tmp/good.ckpt" "$tmp/overlap.ckpt"
forge trailing "$tmp/good.ckpt" "$tmp/trailing.ckpt"
expect_error "resume from overlapping tensors" "overlap" $B/train --data "$tmp/a" --out "$tmp/o.ckpt" --resume "$tmp/overlap.ckpt"
expect_error "sample overlapping tensors" "overlap" $B/sample --model "$tmp/overlap.ckpt" --tokens 3
expect_error "eval bytes after the last tensor" "4096 bytes after its last tensor" \
    $B/eval --model "$tmp/trailing.ckpt" --data "$tmp/a"
cmp -s "$tmp/good.ckpt" "$tmp/good.copy" && ok || bad "the good checkpoint changed"

# ---- a long token in vocab.json --------------------------------------------------
# A vocabulary of the 256 bytes and no merges, then one special token; its
# check ran in quadratic time (a 10 MB token took hours).
vocab_with_token() {  # DIR BYTES
    mkdir -p "$1"
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
cs, k = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + k); k += 1
vocab = {chr(c): i for i, c in enumerate(cs)}
vocab["<" + "x" * (n - 2) + ">"] = 256
json.dump(vocab, open(d + "/vocab.json", "w", encoding="utf-8"), ensure_ascii=False)
open(d + "/merges.txt", "w").write("#version: 0.2\n")
PY
}
timed() {  # NAME CHECK...: runs the check (its command under a 20 s timeout), prints its time
    local name=$1 t0
    shift
    t0=$(date +%s%N)
    "$@"
    echo "  $name: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
vocab_with_token "$tmp/long10m" 10000000
timed "10 MB token refused" expect_error "a 10 MB token" "10000000 bytes long, more than the 65536" \
    timeout -k 2 20 $B/prepare --input "$tmp/a.txt" --out "$tmp/long-out" --tokenizer-from "$tmp/long10m"
vocab_with_token "$tmp/long64k" 65536
timed "64 KB token checked (linear)" expect_ok "a 64 KB token, the longest read (within 20 s)" \
    timeout -k 2 20 $B/prepare --input "$tmp/a.txt" --out "$tmp/long-ok" --tokenizer-from "$tmp/long64k"

# ---- FIFOs and pipes as input files: refused, never waited on --------------------
mkfifo "$tmp/fifo"
mkdir -p "$tmp/fifodata" "$tmp/fifohf"
cp "$tmp/a/train.bin" "$tmp/a/val.bin" "$tmp/fifodata/"
mkfifo "$tmp/fifodata/tokenizer.txt" "$tmp/fifohf/config.json"
NRF="not a regular file"
expect_error "eval --model FIFO" "$NRF" timeout -k 2 10 $B/eval --model "$tmp/fifo" --data "$tmp/a"
expect_error "sample --model FIFO" "$NRF" timeout -k 2 10 $B/sample --model "$tmp/fifo"
expect_error "inspect --model FIFO" "$NRF" timeout -k 2 10 $B/inspect --model "$tmp/fifo" --prompt "The" --out "$tmp/i"
expect_error "train --init FIFO" "$NRF" timeout -k 2 10 $B/train --data "$tmp/a" --out "$tmp/f.ckpt" --init "$tmp/fifo"
expect_error "train --resume FIFO" "$NRF" timeout -k 2 10 $B/train --data "$tmp/a" --out "$tmp/f.ckpt" --resume "$tmp/fifo"
expect_error "train, tokenizer.txt a FIFO" "$NRF" timeout -k 2 10 $B/train --data "$tmp/fifodata" --out "$tmp/f.ckpt"
expect_error "eval, val.bin a FIFO" "$NRF" timeout -k 2 10 $B/eval --model "$tmp/good.ckpt" --data "$tmp/fifo"
expect_error "prepare --input FIFO" "$NRF" timeout -k 2 10 $B/prepare --input "$tmp/fifo" --out "$tmp/x"
expect_error "prepare --tokenizer-from FIFO" "$NRF" timeout -k 2 10 $B/prepare --input "$tmp/a.txt" --out "$tmp/x" \
    --tokenizer-from "$tmp/fifo"
expect_error "convert --from-hf, config.json a FIFO" "$NRF" timeout -k 2 10 $B/convert --from-hf "$tmp/fifohf" --out "$tmp/x.ckpt"
expect_error "convert --to-hf FIFO" "$NRF" timeout -k 2 10 $B/convert --to-hf "$tmp/fifo" --out "$tmp/xhf"
expect_error "prepare --input <(cat FILE)" "not a regular file \(it is a FIFO or pipe\)" \
    timeout -k 2 10 bash -c '"$1" --input <(cat "$2") --out "$3"' _ $B/prepare "$tmp/a.txt" "$tmp/x"
[ ! -e "$tmp/x" ] && [ ! -e "$tmp/f.ckpt" ] && ok || bad "a refused FIFO left output behind"

# ---- an address-space limit (ulimit -v) ------------------------------------------
# OpenBLAS retried its start-up mmap for ever under a small limit. A sanitizer
# build cannot start under any such limit (its shadow memory alone is
# terabytes of address space), so this runs on the release build only.
if [ $asan = 0 ]; then
    for kb in 150000 300000; do
        expect_error "ulimit -v $kb: train --resume" "address-space limit \(ulimit -v\) of [0-9]+ MiB is below" \
            bash -c 'ulimit -v "$1"; shift; exec timeout -k 2 20 "$@"' _ $kb \
            $B/train --data "$tmp/a" --out "$tmp/u.ckpt" --resume "$tmp/good.ckpt" --max-iters 6
    done
    expect_error "ulimit -v 150000, one thread: eval" "address-space limit" \
        bash -c 'ulimit -v 150000; OMP_NUM_THREADS=1 exec timeout -k 2 20 "$@"' _ $B/eval --model "$tmp/good.ckpt" --data "$tmp/a"
    # Above the floor: runs, or reports, but never hangs.
    bash -c 'ulimit -v 2000000; exec timeout -k 2 60 "$@"' _ $B/train --data "$tmp/a" --out "$tmp/u.ckpt" "${SMALL[@]}" \
        --max-iters 2 >/dev/null 2>&1
    rc=$?
    [ $rc -ne 124 ] && [ $rc -ne 137 ] && ok || bad "ulimit -v 2000000: train hung"
else
    echo "  (ulimit -v cases: release build only; a sanitizer build cannot start under an address-space limit)"
fi

# ---- two runs on one --out -------------------------------------------------------
$B/train --data "$tmp/a" --out "$tmp/two.ckpt" "${SMALL[@]}" --max-iters 100000 --eval-interval 100000 >/dev/null 2>&1 &
first=$!
for _ in $(seq 1 200); do [ -s "$tmp/two.ckpt.lock" ] && break; sleep 0.05; done
expect_error "a second run on the same --out" "being written by another run \(pid $first\)" \
    $B/train --data "$tmp/a" --out "$tmp/two.ckpt" "${SMALL[@]}" --max-iters 2
kill -INT $first
wait $first
expect_ok "the first run's checkpoint, saved on Ctrl-C, loads" $B/sample --model "$tmp/two.ckpt" --tokens 3
expect_ok "once the first has ended, the same --out is free" $B/train --data "$tmp/a" --out "$tmp/two.ckpt" "${SMALL[@]}" --max-iters 2

# ---- temporaries left by killed runs ---------------------------------------------
dead=$(bash -c 'echo $$')  # a pid that has exited
head -c 50000 /dev/urandom >"$tmp/stale.ckpt.tmp.$dead"
head -c 10 /dev/urandom >"$tmp/stale.ckpt.tmp.$$"       # this shell's: alive, kept
ln -s "$tmp/victim.txt" "$tmp/stale.ckpt.tmp.999999999" # not a regular file: kept
$B/train --data "$tmp/a" --out "$tmp/stale.ckpt" "${SMALL[@]}" --max-iters 2 --warmup-iters 1 >/dev/null 2>"$tmp/err"
grep -q "removed 1 temporary of $tmp/stale.ckpt left by runs that were killed" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ] \
    && ok || bad "stale temporaries: stderr '$(cat "$tmp/err")'"
[ ! -e "$tmp/stale.ckpt.tmp.$dead" ] && [ -e "$tmp/stale.ckpt.tmp.$$" ] && [ -L "$tmp/stale.ckpt.tmp.999999999" ] \
    && [ "$(cat "$tmp/victim.txt")" = "precious" ] && ok || bad "stale temporaries: the wrong files removed or kept"

# ---- the small refusals ----------------------------------------------------------
expect_error "a special token that is not UTF-8" "special token 1 is not valid UTF-8 \(byte 0xff at offset 1\)" \
    $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size 300 --special $'x\xff"\\y'
expect_error "a --doc-separator that is not UTF-8" "not valid UTF-8" \
    $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size 300 --doc-separator $'<\xc3>'
$B/sample --model "$tmp/good.ckpt" --tokens 0 --prompt "The" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && [ ! -s "$tmp/err" ] && [ "$(cat "$tmp/out")" = "The" ] && ok \
    || bad "sample --tokens 0: exit $?, stderr '$(head -c 300 "$tmp/err")'"
expect_error "--grassmann-windows 1,1" "lists 1 twice" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" "${SMALL[@]}" --mixer grassmann --grassmann-windows 1,1
expect_error "--grassmann-windows 1,1;1,1 (the schedule form)" "lists 1 twice" \
    $B/train --data "$tmp/a" --out "$tmp/x.ckpt" "${SMALL[@]}" --mixer grassmann --grassmann-windows "1,1;1,1"
for n in 0 1; do
    expect_error "--induction-length $n" "--induction-length must be between 2 and" \
        $B/inspect --model "$tmp/good.ckpt" --prompt "The" --out "$tmp/i" --induction-length $n
done

# A directory path of 4,085 characters: DIR/config.json does not fit the
# 4,096-byte path buffers, and is refused rather than cut to DIR/config.js.
long="$tmp"
while [ ${#long} -lt 3885 ]; do long="$long/$(printf 'd%.0s' $(seq 1 199))"; done
long="$long/$(printf 'e%.0s' $(seq 1 $((4085 - ${#long} - 1))))"
mkdir -p "$long"
: >"$long/config.js"
expect_error "a 4,085-character directory (config.json would be cut)" "path too long" \
    $B/convert --from-hf "$long" --out "$tmp/x.ckpt"
expect_error "a 4,085-character data directory" "path too long" $B/train --data "$long" --out "$tmp/x.ckpt" "${SMALL[@]}"

echo "harden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
