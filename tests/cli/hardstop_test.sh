#!/usr/bin/env bash
# Hard stops and full disks lose nothing: bin/train checkpointing every step
# is killed with SIGKILL at random moments (many of them during a checkpoint
# write) and each time the checkpoint on disk loads, passes its checksum and
# resumes (the next round resumes from it); writes past a file-size limit
# (RLIMIT_FSIZE, as a full disk would refuse them) give one line naming the
# file and keep the previous checkpoint.
set -u
cd "$(dirname "$0")/../.."
source tests/cli/cli_lib.sh
KILLS=${KILLS:-50}

for i in $(seq 1 300); do echo "Call me Ishmael. Some years ago, never mind how long precisely, line $i."; done >"$tmp/a.txt"
$B/prepare --input "$tmp/a.txt" --out "$tmp/a" >/dev/null || { echo "FAIL: prepare"; exit 1; }
# A model whose checkpoint (~10 MB with the AdamW moments, fsynced) takes
# longer to write than a step takes to compute, so that many kills land
# during a write, and some between writes.
RUN=(--data "$tmp/a" --n-layer 1 --n-head 4 --n-embd 256 --block-size 8 --batch-size 1 --max-iters 1000000
     --eval-interval 0 --eval-iters 1 --log-interval 1000000 --ckpt-interval 1 --out "$tmp/run.ckpt")

# ---- SIGKILL at random moments ---------------------------------------------------
RANDOM=7
mid_write=0
resumed=0
last_step=0
for k in $(seq 1 "$KILLS"); do
    rm -f "$tmp"/run.ckpt.tmp.*
    if [ -e "$tmp/run.ckpt" ]; then
        $B/train "${RUN[@]}" --resume "$tmp/run.ckpt" >"$tmp/out" 2>&1 &
    else
        $B/train "${RUN[@]}" >"$tmp/out" 2>&1 &
    fi
    pid=$!
    # Start-up takes longer on a loaded machine: the random moment is counted
    # from the first checkpoint write this run begins, not from its launch.
    for _ in $(seq 1 3000); do
        compgen -G "$tmp/run.ckpt.tmp.*" >/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.01
    done
    sleep "0.$(printf '%03d' $((RANDOM % 400)))"
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    ls "$tmp"/run.ckpt.tmp.* >/dev/null 2>&1 && mid_write=$((mid_write + 1))
    if [ -e "$tmp/run.ckpt" ]; then
        if $B/eval --model "$tmp/run.ckpt" --data "$tmp/a" --json >"$tmp/ev" 2>"$tmp/everr"; then
            step=$(/usr/bin/python3 -c 'import sys; from harness.safetensors_np import read_safetensors
print(read_safetensors(sys.argv[1])[1]["step"])' "$tmp/run.ckpt" 2>/dev/null || echo -1)
            if [ "$step" -lt "$last_step" ]; then bad "kill $k: the checkpoint went back from step $last_step to $step"; fi
            [ "$step" -gt "$last_step" ] && [ "$last_step" -gt 0 ] && resumed=$((resumed + 1))
            last_step=$step
        else
            bad "kill $k: the checkpoint does not load: $(cat "$tmp/everr")"
        fi
    fi
done
rm -f "$tmp"/run.ckpt.tmp.*  # what the last kill left
[ "$mid_write" -gt 0 ] && ok || bad "no kill of $KILLS landed during a checkpoint write"
[ "$resumed" -gt 0 ] && [ "$last_step" -gt 0 ] && ok || bad "no run resumed and moved on (last step $last_step)"
echo "hardstop: $KILLS SIGKILLs, $mid_write during a checkpoint write; the checkpoint always loaded; $resumed resumed runs moved on, to step $last_step"

# ---- a full disk ---------------------------------------------------------------------
SMALL=(--data "$tmp/a" --n-layer 2 --n-head 4 --n-embd 128 --block-size 32 --batch-size 4 --eval-interval 0 --eval-iters 1 --warmup-iters 1)
$B/train "${SMALL[@]}" --max-iters 3 --out "$tmp/good.ckpt" >/dev/null 2>&1 || bad "the small run failed"
cp "$tmp/good.ckpt" "$tmp/good.copy"
size=$(stat -c %s "$tmp/good.ckpt")
# expect_full NAME PATTERN STATUS COMMAND...: that exit status, one line on stderr matching PATTERN, the good checkpoint unchanged.
expect_full() {
    local name=$1 pattern=$2 status=$3
    shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -ne "$status" ]; then bad "$name: exit $rc, wanted $status ($(head -c 300 "$tmp/err"))"
    elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then bad "$name: $(wc -l <"$tmp/err") lines on stderr: $(head -c 400 "$tmp/err")"
    elif ! grep -qE -e "$pattern" "$tmp/err"; then bad "$name: '$(cat "$tmp/err")' does not match /$pattern/"
    elif ! cmp -s "$tmp/good.ckpt" "$tmp/good.copy"; then bad "$name: the previous checkpoint changed"
    elif ls "$tmp"/*.tmp.* >/dev/null 2>&1; then bad "$name: left a temporary file"
    else ok; fi
}
expect_full "checkpoint on a full disk" "cannot write '$tmp/good.ckpt': File too large \(the previous file, if any, is unchanged\)" 2 \
    prlimit --fsize=$((size / 2)) $B/train "${SMALL[@]}" --max-iters 6 --resume "$tmp/good.ckpt" --out "$tmp/good.ckpt"
expect_full "periodic checkpoint on a full disk" "cannot write '$tmp/good.ckpt'" 2 \
    prlimit --fsize=$((size / 2)) $B/train "${SMALL[@]}" --max-iters 6 --ckpt-interval 1 --resume "$tmp/good.ckpt" --out "$tmp/good.ckpt"
expect_full "log on a full disk" "cannot write the log '$tmp/run.csv': File too large; stopping without saving" 1 \
    prlimit --fsize=3000 $B/train "${SMALL[@]}" --max-iters 300 --resume "$tmp/good.ckpt" --out "$tmp/good.ckpt" --log "$tmp/run.csv"

# A token file on a full disk: one line naming it, no file half-written.
for i in $(seq 1 3000); do echo "A longer text for a token file that does not fit, line $i."; done >"$tmp/big.txt"
prlimit --fsize=20000 $B/prepare --input "$tmp/big.txt" --out "$tmp/full" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qE "cannot write '$tmp/full/train.bin'.*File too large" "$tmp/err" \
    && [ ! -e "$tmp/full/train.bin" ] && ! ls "$tmp/full"/*.tmp* >/dev/null 2>&1; then ok
else bad "token file on a full disk: exit $rc, $(head -c 300 "$tmp/err"), $(ls "$tmp/full" 2>&1)"; fi

echo "hardstop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
