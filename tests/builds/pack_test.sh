#!/usr/bin/env bash
# make pack: the packed copy runs from any directory with no LD_LIBRARY_PATH,
# its programs and unit tests find every library but glibc's inside it, and
# its unit tests pass there at every level this CPU runs.
#   bash tests/builds/pack_test.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
make -s pack PACK="$tmp/pack" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL: make pack"; exit 1; }
p=$tmp/pack
check "programs and unit tests packed" '[ -x $p/bin/train ] && [ -x $p/bin/gemm-rate ] && [ -x $p/tests/test_units ]'
# Each program's output is kept before grep reads it: with pipefail, grep -q
# leaving at its first match would fail the pipeline on the writer's SIGPIPE.
check "the programs' RPATH is \$ORIGIN/../lib" 'dyn=$(readelf -d $p/bin/train) && grep -q "R.*PATH.*\[\$ORIGIN/../lib" <<<"$dyn"'
glibc='/(ld-linux[^/]*|libc|libm|libpthread|libdl|librt|libresolv)\.so'
outside=$(for f in $p/bin/* $p/tests/*; do ldd "$f" | awk '/=> \// {print $3}'; done | grep -vE "$glibc" | xargs -r realpath | grep -v "^$(realpath $p/lib)/" | sort -u || true)
check "every library but glibc's resolves inside the pack${outside:+ (outside: $outside)}" '[ -z "$outside" ]'
check "bin/train runs from another directory without LD_LIBRARY_PATH" \
      'help=$(cd / && env -u LD_LIBRARY_PATH $p/bin/train --help) && grep -q "^usage: " <<<"$help"'
for l in $($p/bin/gemm-rate --isa-levels); do
  check "the packed unit tests pass at $l" \
        'for t in $p/tests/test_*; do (cd / && env -u LD_LIBRARY_PATH LM_MAX_ISA=$l OMP_NUM_THREADS=2 $t >$tmp/t.log 2>&1) || { tail -20 $tmp/t.log; exit 1; }; done'
done
[ "$fail" = 0 ] && echo "pack: all checks passed"
exit "$fail"
