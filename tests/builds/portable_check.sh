#!/usr/bin/env bash
# A build for any x86-64 (make release: -march=x86-64) must hold AVX code
# only where a run-time check guards it: the instruction-set levels' own
# objects (*.avx2.o, *.avx512.o: chosen by cpu_isa(); the AVX512_BF16
# kernels are avx512's, chosen by cpu_bf16()). Every other object of the
# library must hold no VEX or EVEX instruction at all (no ymm, zmm or mask
# register, no v-prefixed instruction on xmm), or the release would die of
# SIGILL on a CPU without AVX (the portable level's objects, *.portable.o,
# included).
# The levels' objects must hold some (else the check would be checking
# nothing).
#   bash tests/builds/portable_check.sh OBJDIR      (e.g. build-release-openblas)
set -euo pipefail
dir=${1:?usage: tests/builds/portable_check.sh OBJDIR}
[ -d "$dir" ] || { echo "portable_check: no such directory: $dir" >&2; exit 2; }
avx='%[yz]mm[0-9]|%k[0-7]|[[:space:]]v[a-z0-9]+[[:space:]].*%xmm[0-9]|vzeroupper'
fail=0 levels=0 others=0
while IFS= read -r obj; do
    n=$(objdump -d --no-show-raw-insn "$obj" | grep -cE "$avx" || true)
    case "$obj" in
    *.avx2.o | *.avx512.o)
        levels=$((levels + 1))
        [ "$n" -gt 0 ] || { echo "portable_check: $obj has no AVX instruction: is it built with its level's flags?"; fail=1; } ;;
    *)
        others=$((others + 1))
        if [ "$n" -gt 0 ]; then
            echo "portable_check: $obj has $n AVX instructions outside the levels' objects, e.g.:"
            objdump -d --no-show-raw-insn "$obj" | grep -E "$avx" | head -3
            fail=1
        fi ;;
    esac
done < <(find "$dir" -name '*.o' | sort)
[ "$levels" -gt 0 ] && [ "$others" -gt 0 ] || { echo "portable_check: no objects in $dir"; exit 1; }
[ "$fail" = 0 ] || exit 1
echo "portable_check: $others objects without AVX, $levels level objects with it ($dir)"
