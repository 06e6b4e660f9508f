#!/usr/bin/env bash
# bin/train on 2 ranks under mpirun: equal, step for step, to one process
# with twice the gradient accumulation; a resumed 2-rank run equals an
# uninterrupted one byte for byte, and a checkpoint resumes on another rank
# count; bad jobs give one line from rank 0 and exit 2 on every rank; SIGTERM
# to one rank saves a loadable checkpoint and leaves no process behind.
set -u
cd "$(dirname "$0")/../.."
source tests/cli/cli_lib.sh
B=$(realpath "$B")  # absolute: some jobs run in other directories (-wdir)
trap 'pkill -f "$tmp/" 2>/dev/null; rm -rf "$tmp"' EXIT

# Open MPI refuses to start as root unless told; these tests may run as root
# (CI does). --oversubscribe: the job may have more ranks than free cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
# Under AddressSanitizer (make asan) the ranks keep every memory check but
# leak detection: Open MPI does not free its own start-up allocations (in its
# dlopened components) at MPI_Finalize. The single-process runs here and in
# cli_test.sh check the library's leaks.
MPIRUN=(mpirun --oversubscribe -x ASAN_OPTIONS=detect_leaks=0)
compare=(/usr/bin/python3 -m tests.tools.mpi_compare)

for i in $(seq 1 80); do echo "The whale, the whale! Line $i of a small corpus for the MPI tests; it repeats."; done >"$tmp/a.txt"
$B/prepare --input "$tmp/a.txt" --out "$tmp/a" >/dev/null || { echo "FAIL: prepare"; exit 1; }
RUN=(--data "$tmp/a" --n-layer 2 --n-head 2 --n-embd 32 --block-size 16 --batch-size 4 --max-iters 20
     --eval-interval 5 --eval-iters 4 --log-interval 5 --dropout 0.1 --seed 11)

# Equivalence: 2 ranks x accum 1 against 1 process x accum 2.
"${MPIRUN[@]}" -np 2 $B/train "${RUN[@]}" --out "$tmp/r2.ckpt" --log "$tmp/r2.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && grep -q "^mpi: 2 ranks" "$tmp/out" && [ "$(grep -c '^step    20/20' "$tmp/out")" -eq 1 ] && ok \
    || bad "2-rank run: exit $rc, $(tail -c 300 "$tmp/err")"
$B/train "${RUN[@]}" --grad-accum 2 --out "$tmp/r1.ckpt" --log "$tmp/r1.csv" >/dev/null 2>&1 || bad "1-process run failed"
if "${compare[@]}" --logs "$tmp/r2.csv" "$tmp/r1.csv" --ckpts "$tmp/r2.ckpt" "$tmp/r1.ckpt" --tol 1e-5 >"$tmp/cmp" 2>&1; then ok
else bad "2 ranks vs --grad-accum 2: $(cat "$tmp/cmp")"; fi
# With 2 ranks each gradient element is fl(g0 + g1) either way: bit for bit
# (at the same threads per process).
cmp -s "$tmp/r2.ckpt" "$tmp/r1.ckpt" && ok || bad "2 ranks vs --grad-accum 2: the checkpoints are not byte for byte equal"

# The same in bf16 (where the CPU has it): the ranks' bf16 products and the
# fp32 all-reduce of their gradients give one process's bytes.
if grep -qw avx512_bf16 /proc/cpuinfo; then
    "${MPIRUN[@]}" -np 2 $B/train "${RUN[@]}" --precision bf16 --out "$tmp/b2.ckpt" >"$tmp/out" 2>"$tmp/err" \
        && grep -q "^precision: bf16" "$tmp/out" && ok || bad "2-rank bf16 run: $(tail -c 300 "$tmp/err")"
    $B/train "${RUN[@]}" --precision bf16 --grad-accum 2 --out "$tmp/b1.ckpt" >/dev/null 2>&1 || bad "1-process bf16 run failed"
    cmp -s "$tmp/b2.ckpt" "$tmp/b1.ckpt" && ok || bad "bf16: 2 ranks vs --grad-accum 2: the checkpoints are not byte for byte equal"
fi

# Resume on 2 ranks: byte for byte the uninterrupted run.
"${MPIRUN[@]}" -np 2 $B/train "${RUN[@]}" --stop-at 8 --out "$tmp/half.ckpt" >/dev/null 2>&1 || bad "2-rank run to step 8 failed"
cp "$tmp/half.ckpt" "$tmp/half1.ckpt"
"${MPIRUN[@]}" -np 2 $B/train "${RUN[@]}" --resume "$tmp/half.ckpt" --out "$tmp/resumed.ckpt" >/dev/null 2>&1 \
    || bad "2-rank resume failed"
cmp -s "$tmp/resumed.ckpt" "$tmp/r2.ckpt" && ok || bad "a resumed 2-rank run differs from the uninterrupted one"

# The 2-rank checkpoint on 1 rank (it takes both micro-batches of a step),
# and a 1-process checkpoint on 2 ranks, continue the same run.
$B/train --data "$tmp/a" --resume "$tmp/half1.ckpt" --out "$tmp/on1.ckpt" >"$tmp/out" 2>&1 || bad "resume on 1 rank failed"
grep -q "accum 2 " "$tmp/out" && ok || bad "resume on 1 rank did not take the 2 micro-batches: $(grep '^train:' "$tmp/out")"
cmp -s "$tmp/on1.ckpt" "$tmp/r2.ckpt" && ok || bad "2-rank checkpoint resumed on 1 rank: $("${compare[@]}" --ckpts "$tmp/on1.ckpt" "$tmp/r2.ckpt")"
$B/train "${RUN[@]}" --grad-accum 2 --stop-at 8 --out "$tmp/half_single.ckpt" >/dev/null 2>&1
"${MPIRUN[@]}" -np 2 $B/train --data "$tmp/a" --resume "$tmp/half_single.ckpt" --out "$tmp/on2.ckpt" >/dev/null 2>&1 \
    || bad "1-process checkpoint resumed on 2 ranks failed"
cmp -s "$tmp/on2.ckpt" "$tmp/r1.ckpt" && ok || bad "1-process checkpoint resumed on 2 ranks: $("${compare[@]}" --ckpts "$tmp/on2.ckpt" "$tmp/r1.ckpt")"

# Bad jobs: one line from rank 0 (mpirun adds its own report), exit 2, no checkpoint.
# expect_job_error NAME PATTERN MPIRUN-ARGS...
expect_job_error() {
    local name=$1 pattern=$2
    shift 2
    rm -f "$tmp/x.ckpt"
    "${MPIRUN[@]}" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    local ours
    ours=$(grep -c '^train: error' "$tmp/err")
    if [ $rc -ne 2 ]; then bad "$name: exit $rc, wanted 2 ($(grep '^train:' "$tmp/err" | head -3))"
    elif [ "$ours" -ne 1 ]; then bad "$name: $ours error lines, wanted 1: $(grep '^train:' "$tmp/err" | head -3)"
    elif ! grep '^train: error' "$tmp/err" | grep -qiE -e "$pattern"; then bad "$name: '$(grep '^train: error' "$tmp/err")' does not match /$pattern/"
    elif [ -e "$tmp/x.ckpt" ]; then bad "$name: wrote a checkpoint"
    else ok; fi
}
SMALL=("${RUN[@]}" --out "$tmp/x.ckpt")
expect_job_error "ranks with different options" "rank 1 was started with a different command line: argument [0-9]+ is '2e-3' there, '1e-3' on rank 0" \
    -np 1 $B/train "${SMALL[@]}" --lr 1e-3 : -np 1 $B/train "${SMALL[@]}" --lr 2e-3
mkdir -p "$tmp/w0" "$tmp/w1" "$tmp/w2"
cp -r "$tmp/a" "$tmp/w0/d"
cp -r "$tmp/a" "$tmp/w2/d" && echo "x" >>"$tmp/w2/d/val.bin"
REL=(--data d --n-layer 2 --n-head 2 --n-embd 32 --block-size 16 --batch-size 4 --max-iters 5 --out "$tmp/x.ckpt")
expect_job_error "a rank that cannot read the data" "rank 1: cannot read 'd/train.bin'" \
    -np 1 -wdir "$tmp/w0" $B/train "${REL[@]}" : -np 1 -wdir "$tmp/w1" $B/train "${REL[@]}"
expect_job_error "a rank with other data" "rank 1: 'd/val.bin' differs from rank 0's" \
    -np 1 -wdir "$tmp/w0" $B/train "${REL[@]}" : -np 1 -wdir "$tmp/w2" $B/train "${REL[@]}"
$B/train "${RUN[@]}" --grad-accum 3 --stop-at 2 --out "$tmp/accum3.ckpt" >/dev/null 2>&1
expect_job_error "micro-batches that 2 ranks cannot share" "3 micro-batches, which 2 ranks cannot share" \
    -np 2 $B/train --data "$tmp/a" --resume "$tmp/accum3.ckpt" --out "$tmp/x.ckpt"
expect_job_error "dump-grads on 2 ranks" "one process" -np 2 $B/train "${RUN[@]}" --dump-grads "$tmp/x.ckpt"
expect_job_error "max-seconds on 2 ranks" "--max-seconds runs in one process" -np 2 $B/train "${SMALL[@]}" --max-seconds 5
expect_job_error "bad option on every rank" "unknown option" -np 2 $B/train "${SMALL[@]}" --bogus

# SIGTERM to one rank: every rank stops after the same step, rank 0 saves.
"${MPIRUN[@]}" -np 2 $B/train "${RUN[@]}" --max-iters 1000000 --eval-interval 0 --out "$tmp/term.ckpt" \
    --log "$tmp/term.csv" >"$tmp/term.out" 2>"$tmp/term.err" &
job=$!
for _ in $(seq 1 200); do [ -s "$tmp/term.csv" ] && [ "$(wc -l <"$tmp/term.csv")" -gt 5 ] && break; sleep 0.05; done
ranks=$(pgrep -f -- "--out $tmp/term.ckpt" | while read -r p; do [ "$(ps -o comm= -p "$p")" = train ] && echo "$p"; done)
victim=$(echo "$ranks" | tail -1)
if [ "$(echo "$ranks" | wc -w)" -eq 2 ]; then ok; else bad "SIGTERM test: found ranks '$ranks'"; fi
kill -TERM "$victim" 2>/dev/null
for _ in $(seq 1 200); do kill -0 $job 2>/dev/null || break; sleep 0.05; done
if kill -0 $job 2>/dev/null; then bad "SIGTERM to one rank: the job still runs after 10 s"; kill -KILL $job; fi
wait $job
rc=$?
left=$(pgrep -f -- "--out $tmp/term.ckpt" | wc -l)
if [ $rc -eq 130 ] && [ "$left" -eq 0 ] && grep -q "^interrupted: checkpoint at step" "$tmp/term.out"; then ok
else bad "SIGTERM to one rank: exit $rc, $left processes left, $(tail -c 300 "$tmp/term.out" "$tmp/term.err")"; fi
$B/eval --model "$tmp/term.ckpt" --data "$tmp/a" >/dev/null 2>&1 && ok || bad "SIGTERM to one rank: the checkpoint does not load"

echo "mpi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
