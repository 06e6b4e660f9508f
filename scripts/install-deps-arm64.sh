#!/usr/bin/env bash
# Installs what make arm64-test needs on a Debian x86-64 machine (as root, or
# through sudo): Debian's aarch64 cross compiler, qemu-user to run its
# programs, and the ARM64 libraries as multiarch packages beside the x86-64
# ones (dpkg --add-architecture arm64). oneDNN and MPI are left out: the
# ARM64 build goes without them (bf16 and mpirun jobs are refused there).
# Header-only libraries (stb, xxHash) are scripts/install-deps.sh's: the
# cross compiler reads /usr/include too.
# Skips apt entirely when everything is already there.
set -euo pipefail
PACKAGES=(
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # the cross compiler and its C library
    qemu-user                                    # qemu-aarch64: runs the ARM64 programs and tests
    libopenblas-openmp-dev:arm64 libgomp1:arm64  # sgemm (OpenBLAS, OpenMP build) and OpenMP
    libcmocka-dev:arm64 libpcre2-dev:arm64 libjansson-dev:arm64 zlib1g-dev:arm64
)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
dpkg --print-foreign-architectures | grep -qx arm64 || { $SUDO dpkg --add-architecture arm64; }
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps-arm64: all packages present"
    exit 0
fi
echo "install-deps-arm64: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps-arm64: done"
