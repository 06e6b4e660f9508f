#!/usr/bin/env bash
# Packs a build made by `make pack` into one folder that runs on another
# x86-64 Linux machine without this project's Debian packages (a many-core
# or accelerator machine where nothing can be installed):
#   PACK/bin    the programs (bin/train, bin/eval, ...: the release, built for
#               any x86-64, our kernels at that CPU's best level)
#   PACK/tests  the unit tests (run each at every level that CPU has:
#               for l in $(PACK/bin/gemm-rate --isa-levels); do LM_MAX_ISA=$l PACK/tests/test_units; done)
#   PACK/lib    every shared library those need but glibc's; the programs
#               find them through their RPATH ($ORIGIN/../lib), so neither
#               LD_LIBRARY_PATH nor anything else on that machine changes.
# Usage (make pack runs it): bash scripts/pack.sh BUILD_DIR PACK_DIR
# The harness and tests expect the programs in bin/: there, `ln -s PACK/bin bin`.
set -euo pipefail
build=${1:?usage: scripts/pack.sh BUILD_DIR PACK_DIR}
out=${2:?usage: scripts/pack.sh BUILD_DIR PACK_DIR}
[ -x "$build/bin/train" ] || { echo "pack: $build/bin/train is missing: run make pack" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out/bin" "$out/tests" "$out/lib"
cp "$build"/bin/* "$out/bin/"
cp "$build"/test_* "$out/tests/"
# glibc's own libraries stay behind: the other machine's are the ones its
# kernel and dynamic loader go with (and any newer glibc runs these).
glibc='/(ld-linux[^/]*|libc|libm|libpthread|libdl|librt|libresolv)\.so'
for f in "$out"/bin/* "$out"/tests/*; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -vE "$glibc" | while read -r lib; do cp -L "$lib" "$out/lib/"; done
# Every library must now resolve inside the pack (the RPATH comes first).
if ldd "$out/bin/train" | awk '/=> \// {print $3}' | grep -vE "$glibc" | xargs realpath | grep -v "^$(cd "$out/lib" && pwd)/"; then
  echo "pack: the libraries above resolve outside $out/lib: is the build's RPATH missing?" >&2; exit 1
fi
echo "packed $(ls "$out/bin" | wc -l) programs, $(ls "$out/tests" | wc -l) unit tests and $(ls "$out/lib" | wc -l) libraries into $out ($(du -sh "$out" | cut -f1))"
