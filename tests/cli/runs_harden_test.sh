#!/usr/bin/env bash
# Run folders against a hostile user: a run folder is one unit, owned by one
# lock, and every exit path keeps its last good state. --resume of a file
# in a run folder resumes the folder or is refused (best.ckpt and
# step-N.ckpt never continued in place; nothing from outside the run writes
# into the folder); a failed write of best.ckpt or step-N.ckpt saves the
# run's checkpoint first, or says which file holds the last good state;
# SIGHUP, SIGQUIT and SIGPIPE checkpoint as SIGINT does (nohup's SIGHUP
# stays ignored), and what killed runs left of any of the run's files goes
# at the next start; --run never writes into a folder that is not a run's;
# a log shared with a copy made by cp -al is never appended to through it,
# and rows past the checkpoint are dropped on resume; bin/info builds its JSON from parsed values, escapes what it
# prints, lists past an unreadable run and reads a bounded config.json; a
# resumed run's config.json and --print-config are the run's; mixer options
# no layer uses are refused. Every refusal: one line, exit 2.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/cli_lib.sh  # B, tmp, ok, bad, expect_error, expect_ok, small_corpora

small_corpora  # a.txt, b.txt, a, b
TINY=(--n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 2 --log-interval 5
      --warmup-iters 2 --max-iters 20)
R=$tmp/runs
steps() { cut -d, -f1 "$1" | tail -n +2 | tr '\n' ' '; }  # the step column of a CSV log
ckpt_step() {  # the step of a checkpoint or run folder, -1 when it cannot be read
    $B/info "$1" --json 2>/dev/null | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["step"])' \
        2>/dev/null || echo -1
}
# no_duplicates LOG NAME: the log's steps rise by one, from 0
no_duplicates() {
    local want
    want=$(seq 0 $(($(steps "$1" | wc -w) - 1)) | tr '\n' ' ')
    [ "$(steps "$1")" = "$want" ] && ok || bad "$2: the log's steps are $(steps "$1")"
}
expect_ok "a run folder" $B/train --data "$tmp/a" "${TINY[@]}" --run "$R/base" --ckpt-interval 5 --keep-checkpoints 1 \
    --stop-at 10 --eval-interval 5
[ -f "$R/base/.lm-run" ] && ok || bad "a new run folder holds no marker: $(ls -a "$R/base" | tr '\n' ' ')"
cp -r "$R/base" "$tmp/base.copy"

# ---- 2. --resume of a file inside a run folder ------------------------------------
for f in best.ckpt step-000005.ckpt; do
    expect_error "--resume RUN/$f" "a file of the run folder '$R/base', which is never continued in place: continue the run with --resume $R/base" \
        $B/train --resume "$R/base/$f"
done
expect_error "--resume RUN/best.ckpt --out into the folder" "is in the run folder '$R/base', whose files its own run writes" \
    $B/train --resume "$R/base/best.ckpt" --out "$R/base/other.ckpt"
diff -r "$R/base" "$tmp/base.copy" >/dev/null && ok || bad "a refused resume changed the run folder"
expect_ok "--resume RUN/best.ckpt --out elsewhere: a run from it" $B/train --resume "$R/base/best.ckpt" \
    --out "$tmp/branch.ckpt" --stop-at 12
cmp -s "$R/base/best.ckpt" "$tmp/base.copy/best.ckpt" && [ "$(ckpt_step "$tmp/branch.ckpt")" = 12 ] && ok \
    || bad "a run from best.ckpt elsewhere: best.ckpt changed, or the branch is not at step 12"
expect_ok "--resume RUN/ckpt: the folder's run" $B/train --resume "$R/base/ckpt" --stop-at 16
[ "$(ckpt_step "$R/base")" = 16 ] && [ -f "$R/base/step-000015.ckpt" ] && ! ls "$R/base"/ckpt.step-* >/dev/null 2>&1 \
    && [ "$(steps "$R/base/log.csv" | wc -w)" = 17 ] && ok \
    || bad "--resume RUN/ckpt did not go on in the folder: $(ls "$R/base" | tr '\n' ' '), log $(steps "$R/base/log.csv")"

# ---- 3. a failed write of best.ckpt or step-N.ckpt saves the run first ------------------
expect_ok "a run to break" $B/train --data "$tmp/a" "${TINY[@]}" --run "$R/bl" --stop-at 4 --eval-interval 2
rm "$R/bl/best.ckpt" && mkdir "$R/bl/best.ckpt"
expect_error "best.ckpt cannot be written" \
    "best.ckpt' is a directory.*; the run stopped at step [0-9]+, its checkpoint saved to $R/bl/ckpt \(continue with --resume $R/bl\)" \
    $B/train --resume "$R/bl" --stop-at 12
at=$(grep -oE "stopped at step [0-9]+" "$tmp/err" | grep -oE "[0-9]+$")
[ -n "$at" ] && [ "$(ckpt_step "$R/bl")" = "$at" ] && [ "$(steps "$R/bl/log.csv" | awk '{print $NF}')" = "$at" ] && ok \
    || bad "best.ckpt failed: ckpt at step $(ckpt_step "$R/bl"), the message said '$at', the log ends at $(steps "$R/bl/log.csv")"
rmdir "$R/bl/best.ckpt"
expect_ok "resumed after the failure" $B/train --resume "$R/bl" --stop-at 12
no_duplicates "$R/bl/log.csv" "resumed after a failed best.ckpt"
expect_ok "a run keeping its checkpoints" $B/train --data "$tmp/a" "${TINY[@]}" --run "$R/bk" --ckpt-interval 5 \
    --keep-checkpoints 1 --stop-at 3
mkdir "$R/bk/step-000005.ckpt"
expect_error "a kept checkpoint cannot be written" "step-000005.ckpt' is a directory.*the run stopped at step 5, its checkpoint saved to $R/bk/ckpt" \
    $B/train --resume "$R/bk"
[ "$(ckpt_step "$R/bk")" = 5 ] && ok || bad "a failed kept checkpoint: ckpt at step $(ckpt_step "$R/bk")"
# Neither can be written (a file-size limit below a checkpoint's size): the line names the last good one.
expect_error "best.ckpt and ckpt cannot be written" "nor could the run's checkpoint be saved .*: the last good state is $R/bl/ckpt, at step 12" \
    prlimit --fsize=20000 $B/train --resume "$R/bl" --stop-at 16 --eval-interval 1
[ "$(ckpt_step "$R/bl")" = 12 ] && ok || bad "a failed save changed ckpt: step $(ckpt_step "$R/bl")"
expect_error "nothing of a new run can be written" "nor could the run's checkpoint be saved .*: no checkpoint of this run was saved" \
    prlimit --fsize=20000 $B/train --data "$tmp/a" "${TINY[@]}" --run "$R/full"

# ---- 4. SIGHUP and SIGQUIT save, as SIGINT; what killed runs left goes -------------------
# start_long NAME [PREFIX...]: a long run into $R/NAME in the background ($pid), once it has stepped
start_long() {
    local name=$1
    shift
    "$@" $B/train --data "$tmp/a" "${TINY[@]}" --max-iters 1000000 --eval-interval 0 --run "$R/$name" >"$tmp/sig.out" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do [ -s "$R/$name/log.csv" ] && [ "$(wc -l <"$R/$name/log.csv")" -gt 3 ] && break; sleep 0.05; done
}
# stopped PID: its exit status, waiting at most 60 s (then killed: 137)
stopped() {
    for _ in $(seq 1 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1"
}
for sig in HUP QUIT; do
    # The signal's default disposition restored first: a suite run under nohup passes SIGHUP on ignored,
    # and bin/train rightly keeps it so (the nohup check below).
    start_long "sig$sig" env --default-signal=$sig
    kill -$sig $pid
    stopped $pid
    rc=$?
    left=$(find "$R/sig$sig" \( -name '*.lock' -o -name '*.tmp.*' \) | head -3)
    if [ $rc -eq 130 ] && [ -f "$R/sig$sig/ckpt" ] && [ -z "$left" ] && grep -q "^interrupted: checkpoint at step" "$tmp/sig.out"; then ok
    else bad "SIG$sig: exit $rc, left '$left', $(tail -c 300 "$tmp/sig.out")"; fi
done
# The reader of its output gone (| head): SIGPIPE saves too.
$B/train --data "$tmp/a" "${TINY[@]}" --max-iters 1000000 --log-interval 1 --eval-interval 0 --run "$R/pipe" \
    2>"$tmp/err" | head -3 >/dev/null
rc=${PIPESTATUS[0]}
[ "$rc" -eq 130 ] && [ -f "$R/pipe/ckpt" ] && [ -z "$(find "$R/pipe" -name '*.lock')" ] && ok \
    || bad "| head: exit $rc, $(ls "$R/pipe" | tr '\n' ' ') $(cat "$tmp/err")"
# Under nohup a closed terminal is not the end of the run: SIGHUP stays ignored.
start_long nohup nohup
kill -HUP $pid
sleep 0.5
kill -0 $pid 2>/dev/null && ok || bad "nohup: SIGHUP stopped the run"
kill -TERM $pid
stopped $pid
[ $? -eq 130 ] && [ -f "$R/nohup/ckpt" ] && ok || bad "nohup: SIGTERM did not save the run"
dead=$(bash -c 'echo $$')  # a process that is gone
for f in step-000010.ckpt best.ckpt log.csv config.json; do echo junk >"$R/sigHUP/$f.tmp.$dead"; done
at=$(ckpt_step "$R/sigHUP")
expect_ok "--resume after a kill" $B/train --resume "$R/sigHUP" --max-iters 1000000 --stop-at $((at + 1))
grep -q "removed 4 temporaries of $R/sigHUP left by runs that were killed" "$tmp/err" && \
    [ -z "$(find "$R/sigHUP" -name '*.tmp.*')" ] && ok || bad "the dead temporaries: $(cat "$tmp/err"); $(ls "$R/sigHUP")"

# ---- 5. a folder that is not a run; a log with two names; rows past the checkpoint -------
mkdir -p "$tmp/own"
echo '{"mine": 1}' >"$tmp/own/config.json"
cp "$tmp/branch.ckpt" "$tmp/own/best.ckpt"
cp -r "$tmp/own" "$tmp/own.copy"
expect_error "--run into a folder of the user's own" "is not a run folder of bin/train and not empty: its files would be replaced" \
    $B/train --data "$tmp/a" "${TINY[@]}" --run "$tmp/own"
diff -r "$tmp/own" "$tmp/own.copy" >/dev/null && ok || bad "--run changed a folder that is not a run's"
mkdir -p "$tmp/empty"
expect_ok "--run into an empty folder" $B/train --data "$tmp/a" "${TINY[@]}" --run "$tmp/empty" --stop-at 2
cp "$tmp/branch.ckpt" "$tmp/own/ckpt"
expect_error "--resume of a folder that is not a run" "the folder is not a run folder of bin/train.*--resume $tmp/own/ckpt" \
    $B/train --resume "$tmp/own"
cp -al "$R/base" "$R/linked"
cp "$R/base/log.csv" "$tmp/base.csv"
cp "$R/base/log.jsonl" "$tmp/base.jsonl"
expect_ok "--resume a copy made with cp -al" $B/train --resume "$R/linked" --stop-at 18
cmp -s "$R/base/log.csv" "$tmp/base.csv" && cmp -s "$R/base/log.jsonl" "$tmp/base.jsonl" && ok \
    || bad "resuming a hard-linked copy appended to the original's logs: $(steps "$R/base/log.csv")"
no_duplicates "$R/linked/log.csv" "the hard-linked copy"
# Rows a kill left past the checkpoint (and a line it cut) are dropped when the run goes on.
expect_ok "a run stopped at 10" $B/train --data "$tmp/a" "${TINY[@]}" --run "$R/t" --stop-at 10 --eval-interval 5
for s in 11 12; do echo "$s,0,3.5,,,0.001,1,1,1,1"; done >>"$R/t/log.csv"
printf '13,0,3.' >>"$R/t/log.csv"
for s in 11 12; do echo "{\"step\":$s,\"tokens\":0}"; done >>"$R/t/log.jsonl"
expect_ok "resumed past the stray rows" $B/train --resume "$R/t" --stop-at 14
no_duplicates "$R/t/log.csv" "rows past the checkpoint"
[ "$(grep -c '"step":1[12],' "$R/t/log.jsonl")" = 2 ] && ok || bad "log.jsonl: rows past the checkpoint kept"

# ---- 8, 9. bin/info: built JSON, escaped text, unreadable runs, bounded reads -----------
forge() { /usr/bin/python3 -m tests.tools.ckpt_forge "$@"; }
forge 'meta:train=1, "resumable": true, "step": 999999, "x":{' "$R/t/ckpt" "$tmp/forged.ckpt"
json_ok() {  # NAME FILE PYTHON: FILE holds one JSON value for which PYTHON (on j) is true
    /usr/bin/python3 -c "import json, sys; j = json.load(open(sys.argv[1])); assert $3, j" "$2" 2>/dev/null && ok \
        || bad "$1: $(head -c 300 "$2")"
}
expect_ok "bin/info --json of a forged header" $B/info "$tmp/forged.ckpt" --json
json_ok "forged run options" "$tmp/out" 'j["step"] == 14 and j["options"] is None and "x" not in j'
cp -r "$R/t" "$R/cfg"
echo '{"a":1}, "tokens": "many", "q": {}' >"$R/cfg/config.json"
expect_ok "bin/info --json, config.json not an object" $B/info "$R/cfg" --json
json_ok "a config.json of pasted keys" "$tmp/out" 'j["config"] is None and isinstance(j["tokens"], int) and "q" not in j'
forge "meta:train={\"data\":\"$(printf 'x\\u001b[2J\\n')\"}" "$R/t/ckpt" "$tmp/esc.ckpt"
expect_ok "bin/info of a header with control bytes" $B/info "$tmp/esc.ckpt"
! grep -q $'\x1b' "$tmp/out" && grep -q 'x\\x1b\[2J\\x0a' "$tmp/out" && ok || bad "bin/info sent control bytes: $(cat -v "$tmp/out")"
mkdir -p "$tmp/list"
cp -r "$R/t" "$tmp/list/good"
cp -r "$R/t" "$tmp/list/$(printf 'e\033[2Jvil\nname')"
mkdir -p "$tmp/list/empty" && : >"$tmp/list/empty/ckpt"
expect_ok "bin/info --list with an unreadable run" $B/info --list "$tmp/list"
[ "$(wc -l <"$tmp/out")" = 6 ] && ! grep -q $'\x1b' "$tmp/out" && grep -q '^e\\x1b\[2Jvil\\x0aname ' "$tmp/out" \
    && grep -qE '^empty +unreadable: .*ckpt' "$tmp/out" && grep -q '^good ' "$tmp/out" && ok \
    || bad "bin/info --list: $(cat -v "$tmp/out")"
expect_ok "bin/info --list --json with an unreadable run" $B/info --list "$tmp/list" --json
json_ok "bin/info --list --json" "$tmp/out" 'len(j) == 3 and "error" in j[2] and j[0]["step"] == 14'
truncate -s 2G "$tmp/list/good/config.json"  # sparse: read whole, 2 GB of memory
limit=(prlimit --as=1000000000)
case "$B" in *asan*) limit=() ;; esac  # a sanitizer build cannot start under such a limit
expect_ok "bin/info of a huge config.json" "${limit[@]}" $B/info "$tmp/list/good"
grep -q "config.json (larger than 1048576 bytes: not read)" "$tmp/out" && ok || bad "a huge config.json: $(tail -2 "$tmp/out")"
mkdir -p "$tmp/here" && cp -r "$R/t" "$tmp/here/--help"
B_ABS=$(cd "$B" && pwd)
(cd "$tmp/here" && "$B_ABS/info" --help >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc")
[ "$(cat "$tmp/rc")" = 2 ] && grep -q "'--help' is an option, and a file or folder here too: write ./--help" "$tmp/err" && ok \
    || bad "bin/info --help beside a run named --help: exit $(cat "$tmp/rc"), $(head -c 200 "$tmp/out" "$tmp/err")"
(cd "$tmp/here" && "$B_ABS/info" ./--help >"$tmp/out" 2>&1) && grep -q "^run: *./--help" "$tmp/out" && ok \
    || bad "bin/info ./--help: $(head -c 200 "$tmp/out")"

# ---- 10. config.json and --print-config of a resumed run; options no layer uses ---------
expect_ok "a run with --lr 0.002" $B/train --data "$tmp/a" "${TINY[@]}" --run "$R/c" --stop-at 4 --lr 0.002
echo 'nope{' >"$R/c/config.json"
$B/train --resume "$R/c" --stop-at 6 >"$tmp/out" 2>"$tmp/err" && grep -q "warning: '$R/c/config.json' is not an experiment file" "$tmp/err" \
    && /usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$R/c/config.json" && ok \
    || bad "--resume with an invalid config.json: $(cat "$tmp/err")"
/usr/bin/python3 - "$R/c/config.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j.update({"n-layer": "abc", "threads": "abc", "lr": "fast", "no-loss-mask": "yes"})
json.dump(j, open(sys.argv[1], "w"))
PY
expect_ok "--resume with garbage in config.json" $B/train --resume "$R/c" --stop-at 8
json_ok "config.json after a resume" "$R/c/config.json" \
    'j["n-layer"] == 1 and j["lr"] == 0.002 and j["threads"] == 0 and j["no-loss-mask"] is False'
expect_ok "--resume --print-config" $B/train --resume "$R/c" --print-config
json_ok "--print-config of a resumed run" "$tmp/out" 'j["lr"] == 0.002 and j["n-embd"] == 16 and j["resume"].endswith("/c")'
expect_error "--attn-window without attention" "--attn-window 5 is for attention layers, and this model has none" \
    $B/train --data "$tmp/a" "${TINY[@]}" --block-size 32 --mixer grassmann --attn-window 5 --out "$tmp/x.ckpt"
expect_error "--grassmann-pair without grassmann" "--grassmann-pair outer is for grassmann layers" \
    $B/train --data "$tmp/a" "${TINY[@]}" --grassmann-pair outer --out "$tmp/x.ckpt"
expect_error "--attn-window beyond the block" "--attn-window 17 is longer than the block \(--block-size 16\)" \
    $B/train --data "$tmp/a" "${TINY[@]}" --attn-window 17 --out "$tmp/x.ckpt"
expect_error "--out X --log X, both new" "--log '$tmp/./new.ckpt' is --out too" \
    $B/train --data "$tmp/a" "${TINY[@]}" --out "$tmp/new.ckpt" --log "$tmp/./new.ckpt"
[ ! -e "$tmp/new.ckpt" ] && [ ! -e "$tmp/x.ckpt" ] && ok || bad "a refused run wrote its checkpoint"

echo "runs_harden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
