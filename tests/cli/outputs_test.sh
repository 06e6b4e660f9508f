#!/usr/bin/env bash
# The programs against a hostile user, third pass: what they write. Every
# output path is held to one rule before any work (lm/files.h): never a
# device, FIFO, socket or folder, never one of the run's inputs, never in
# a folder that is a file; --log never appends to or truncates a file that is not a
# log; the lock beside a checkpoint is never written through a link, and
# goes away with the run, refused runs included; a file-size limit is a
# failed write said in one line, not a silent death that leaves
# temporaries; a checkpoint holding tensors its config does not claim is
# refused; control characters in an error are shown, not sent to the
# terminal; numbers are decimal, the whole string. Every refusal: one line,
# exit 2, with the files named untouched.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora

small_corpora  # a.txt, b.txt, a, b, SMALL
expect_ok "train" $B/train --data "$tmp/a" --out "$tmp/good.ckpt" "${SMALL[@]}" --max-iters 4
cp "$tmp/good.ckpt" "$tmp/good.copy"
cp -r "$tmp/a" "$tmp/a.copy"
unchanged() {  # NAME: the good checkpoint and the data as they were
    cmp -s "$tmp/good.ckpt" "$tmp/good.copy" && diff -r "$tmp/a" "$tmp/a.copy" >/dev/null && ok \
        || bad "$1: the good checkpoint or the data changed"
}
# refused NAME PATTERN COMMAND...: one line, exit 2, and nothing of the run's
# own: no step trained (no progress line), no lock or temporary left in $tmp.
refused() {
    local name=$1
    expect_error "$@"
    grep -q '^step ' "$tmp/out" && bad "$name: trained before refusing"
    local left
    left=$(find "$tmp" -maxdepth 2 \( -name '*.lock' -o -name '*.tmp.*' \) | head -3)
    [ -z "$left" ] && ok || bad "$name: left $left"
    unchanged "$name"
}
TRAIN=($B/train --data "$tmp/a" "${SMALL[@]}" --max-iters 300)

# ---- 1. outputs that are not plain files -------------------------------------
mkfifo "$tmp/fifo"
/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$tmp/sock"
specials=("$tmp/fifo" "$tmp/sock")
if mknod -m 666 "$tmp/null" c 1 3 2>/dev/null; then specials+=("$tmp/null"); else
    echo "  (not root: the device case is the FIFO's and the socket's path; CI runs it as root)"; fi
for s in "${specials[@]}"; do
    kind=$(stat -c %F "$s")
    refused "--out $kind" "is a (FIFO or pipe|socket|character device), not a file" timeout -k 2 20 "${TRAIN[@]}" --out "$s"
    refused "--dump-grads $kind" "is a (FIFO or pipe|socket|character device), not a file" timeout -k 2 20 \
        $B/train --data "$tmp/a" "${SMALL[@]}" --dump-grads "$s"
    refused "--log $kind" "is a (FIFO or pipe|socket|character device), not a file" timeout -k 2 20 \
        "${TRAIN[@]}" --out "$tmp/x.ckpt" --log "$s"
    [ "$(stat -c %F "$s")" = "$kind" ] && ok || bad "$s: was $kind, now $(stat -c %F "$s")"
done

# ---- 3. an --out that is a folder, empty, or a folder planted at its temporary
mkdir -p "$tmp/somedir"
refused "--out a folder" "is a directory" "${TRAIN[@]}" --out "$tmp/somedir"
refused "--out a folder, slash" "names a folder" "${TRAIN[@]}" --out "$tmp/x/"
refused "--out in a folder that is a file" "--out '$tmp/good.ckpt/x.ckpt': '$tmp/good.ckpt' is not a directory" \
    "${TRAIN[@]}" --out "$tmp/good.ckpt/x.ckpt"
here=$PWD
B_ABS=$(cd "$B" && pwd)
cd "$tmp"
refused "--out empty" "--out is empty" "$B_ABS/train" --data "$tmp/a" "${SMALL[@]}" --out ""
cd "$here"
[ ! -e "$tmp/.lock" ] && ok || bad "--out '': left .lock"
# exec keeps the shell's pid, so the folder sits where the program's temporary goes.
expect_error "a folder at the temporary" "in the way" bash -c 'mkdir "$1.tmp.$$"; shift; exec "$@"' _ "$tmp/planted.ckpt" \
    "${TRAIN[@]}" --out "$tmp/planted.ckpt"
find "$tmp" -maxdepth 1 -name 'planted.ckpt.tmp.*' -type d -exec rmdir {} +
[ ! -e "$tmp/planted.ckpt" ] && [ ! -e "$tmp/planted.ckpt.lock" ] && ok || bad "a folder at the temporary: output or lock left"

# ---- 4. --log and --out never eat a checkpoint or the data -------------------
refused "--log the resumed checkpoint" "which this run reads" \
    $B/train --data "$tmp/a" --resume "$tmp/good.ckpt" --out "$tmp/b.ckpt" --log "$tmp/good.ckpt"
refused "--log a checkpoint, fresh run" "not a training log" "${TRAIN[@]}" --out "$tmp/b.ckpt" --log "$tmp/good.ckpt"
refused "--log the --out" "not a training log|which this run reads|is --out too" "${TRAIN[@]}" --out "$tmp/good.ckpt" --log "$tmp/good.ckpt"
refused "--log the data" "which this run reads" "${TRAIN[@]}" --out "$tmp/b.ckpt" --log "$tmp/a/train.bin"
for f in train.bin val.bin tokenizer.txt; do
    refused "--out the data's $f" "which this run reads" "${TRAIN[@]}" --out "$tmp/a/$f"
done
ln "$tmp/a/val.bin" "$tmp/val-link.bin"
refused "--out a hard link to the data" "which this run reads" "${TRAIN[@]}" --out "$tmp/val-link.bin"
rm "$tmp/val-link.bin"
refused "--dump-grads the checkpoint it starts from" "which this run reads" \
    $B/train --data "$tmp/a" --init "$tmp/good.ckpt" --dump-grads "$tmp/good.ckpt"
# What still works: a run continued in place, and a log resumed.
cp "$tmp/good.ckpt" "$tmp/inplace.ckpt"
expect_ok "a log" $B/train --data "$tmp/a" --out "$tmp/inplace.ckpt" "${SMALL[@]}" --max-iters 4 --log "$tmp/l.csv"
expect_ok "--resume X --out X, appending to its log" $B/train --data "$tmp/a" --resume "$tmp/inplace.ckpt" \
    --out "$tmp/inplace.ckpt" --max-iters 6 --log "$tmp/l.csv"
[ "$(grep -c '^step,' "$tmp/l.csv")" = 1 ] && [ "$(tail -1 "$tmp/l.csv" | cut -d, -f1)" = 6 ] && ok \
    || bad "the resumed log: $(cat "$tmp/l.csv")"

# ---- 5. the lock file ---------------------------------------------------------
cp "$tmp/good.ckpt" "$tmp/keep.ckpt"
ln "$tmp/keep.ckpt" "$tmp/new.ckpt.lock"
expect_error "a lock that is a hard link" "link" $B/train --data "$tmp/a" --out "$tmp/new.ckpt" --resume "$tmp/missing.ckpt"
cmp -s "$tmp/keep.ckpt" "$tmp/good.ckpt" && ok || bad "the file linked as the lock was written ($(stat -c %s "$tmp/keep.ckpt") bytes)"
rm "$tmp/new.ckpt.lock"
ln -s "$tmp/keep.ckpt" "$tmp/new.ckpt.lock"
expect_error "a lock that is a symbolic link" "symbolic link" "${TRAIN[@]}" --out "$tmp/new.ckpt"
cmp -s "$tmp/keep.ckpt" "$tmp/good.ckpt" && ok || bad "the file a lock link points to was written"
rm "$tmp/new.ckpt.lock"
head -c 1000 /dev/zero >"$tmp/new.ckpt.lock"
expect_error "a lock of 1000 bytes" "not a lock file" "${TRAIN[@]}" --out "$tmp/new.ckpt"
[ "$(stat -c %s "$tmp/new.ckpt.lock")" = 1000 ] && ok || bad "a file at the lock's name was truncated"
rm "$tmp/new.ckpt.lock"
refused "a missing --resume" "cannot open" $B/train --data "$tmp/a" --out "$tmp/new.ckpt" --resume "$tmp/missing.ckpt"
refused "a missing --data" "cannot open|no such|does not exist" $B/train --data "$tmp/nodata" --out "$tmp/new.ckpt"
refused "a switch that differs from the checkpoint's" "differs" \
    $B/train --data "$tmp/a" --out "$tmp/new.ckpt" --resume "$tmp/good.ckpt" --n-layer 3
refused "another tokenizer's data" "tokenizer" $B/train --data "$tmp/b" --out "$tmp/new.ckpt" --resume "$tmp/good.ckpt"
expect_ok "a run" "${TRAIN[@]/300/3}" --out "$tmp/new.ckpt"
[ ! -e "$tmp/new.ckpt.lock" ] && ok || bad "a finished run left its lock"

# ---- 6. a file-size limit: one line, no temporaries ---------------------------
EOT='<|endoftext|>'
for i in $(seq 1 40); do echo "the whale and the sea, the ship and the whale $i"; done >"$tmp/bpe.txt"
expect_ok "prepare bpe" $B/prepare --input "$tmp/bpe.txt" --out "$tmp/bpe" --tokenizer bpe --vocab-size 300 --special "$EOT"
expect_ok "train bpe" $B/train --data "$tmp/bpe" --out "$tmp/bpe.ckpt" "${SMALL[@]}" --max-iters 2
expect_ok "export" $B/convert --to-hf "$tmp/bpe.ckpt" --out "$tmp/hf"
mkdir -p "$tmp/fsize"
fsize() {  # NAME COMMAND...: under a 20 kB file-size limit
    local name=$1
    shift
    prlimit --fsize=20000 "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$? left
    left=$(find "$tmp/fsize" -name '*.tmp.*' | head -3)
    if [ "$rc" -eq 0 ] || [ "$rc" -gt 128 ]; then bad "$name: exit $rc under a file-size limit"
    elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "File too large" "$tmp/err"; then bad "$name: $(head -c 300 "$tmp/err")"
    elif [ -n "$left" ]; then bad "$name: left $left"
    else ok; fi
}
fsize "convert --to-hf" $B/convert --to-hf "$tmp/bpe.ckpt" --out "$tmp/fsize/hf"
fsize "convert --from-hf" $B/convert --from-hf "$tmp/hf" --out "$tmp/fsize/from.ckpt"
fsize "inspect" $B/inspect --model "$tmp/good.ckpt" --prompt "The whale" --out "$tmp/fsize/i"
fsize "probegen" $B/probegen --task mqar --out "$tmp/fsize/p"
fsize "train --dump-grads" $B/train --data "$tmp/a" --dump-grads "$tmp/fsize/g.st" --n-layer 2 --n-head 2 --n-embd 64 \
    --block-size 16 --batch-size 4
fsize "train" $B/train --data "$tmp/a" --out "$tmp/fsize/t.ckpt" --n-layer 2 --n-head 2 --n-embd 64 \
    --block-size 16 --batch-size 4 --max-iters 2 --warmup-iters 0
[ ! -e "$tmp/fsize/t.ckpt.lock" ] && ok || bad "a run stopped by a file-size limit left its lock"
refused "convert --from-hf --out a FIFO" "is a FIFO or pipe, not a file" timeout -k 2 20 $B/convert --from-hf "$tmp/hf" --out "$tmp/fifo"
refused "convert --to-hf --out a FIFO" "is a FIFO or pipe, not a folder" timeout -k 2 20 $B/convert --to-hf "$tmp/bpe.ckpt" --out "$tmp/fifo"
refused "inspect --out a checkpoint" "is a file, not a folder" $B/inspect --model "$tmp/good.ckpt" --prompt "The" --out "$tmp/good.ckpt"
refused "probegen --out a socket" "is a socket, not a folder" $B/probegen --task mqar --out "$tmp/sock"
refused "prepare --out a file" "is a file, not a folder" $B/prepare --input "$tmp/a.txt" --out "$tmp/a.txt"

# ---- 7. a checkpoint's tensors are exactly those its config claims ------------
forge() { /usr/bin/python3 -m tests.tools.ckpt_forge "$@"; }
expect_ok "train a modern model" $B/train --data "$tmp/a" --out "$tmp/modern.ckpt" "${SMALL[@]}" --max-iters 2 --recipe modern
forge config:untied_head=false "$tmp/modern.ckpt" "$tmp/tied.ckpt"
forge 'config:norm_type="rmsnorm"' "$tmp/good.ckpt" "$tmp/rms.ckpt"
forge extra "$tmp/good.ckpt" "$tmp/extra.ckpt"
for f in tied:lm_head.weight rms:h.0.ln1.bias extra:h.0.extra.weight; do
    c=$tmp/${f%%:*}.ckpt pat="holds tensor '${f#*:}', which its config does not have"
    expect_error "eval ${f%%:*}" "$pat" $B/eval --model "$c" --data "$tmp/a"
    expect_error "sample ${f%%:*}" "$pat" $B/sample --model "$c" --tokens 3
    expect_error "inspect ${f%%:*}" "$pat" $B/inspect --model "$c" --prompt "The" --out "$tmp/i7"
    refused "--resume ${f%%:*}" "$pat" $B/train --data "$tmp/a" --out "$tmp/r7.ckpt" --resume "$c"
    refused "--init ${f%%:*}" "$pat" $B/train --data "$tmp/a" --out "$tmp/r7.ckpt" --init "$c"
done
forge weights-only "$tmp/good.ckpt" "$tmp/weights.ckpt"
expect_ok "a checkpoint of the weights alone still loads" $B/eval --model "$tmp/weights.ckpt" --data "$tmp/a"

# ---- 10. what reaches the terminal, and numbers ------------------------------
$B/inspect --model "$tmp/good.ckpt" --prompt $'\e]0;PWNED\a\xff' --out "$tmp/i10" 2>"$tmp/err" >/dev/null
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\x80-\xff]' "$tmp/err"; then bad "an error echoed control bytes: $(od -c "$tmp/err" | head -3)"
elif grep -qF '\x1b' "$tmp/err"; then ok
else bad "the prompt's ESC is not shown escaped: $(cat "$tmp/err")"; fi
for v in 0x10 " 5" "5 " inf nan 1e 1e+ . - "1,5"; do
    refused "--logit-softcap '$v'" "is not a number" "${TRAIN[@]}" --out "$tmp/x.ckpt" --logit-softcap "$v"
done
for v in 5 .5 5. 1e-3 +2 2E1; do
    expect_ok "--logit-softcap $v" $B/train --data "$tmp/a" --out "$tmp/x.ckpt" --logit-softcap "$v" --count-params
done

echo "outputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
