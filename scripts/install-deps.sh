#!/usr/bin/env bash
# Installs the Debian packages this project needs (as root, or through sudo).
# Skips apt entirely when everything is already there.
set -euo pipefail
PACKAGES=(
    make gcc                 # the build
    libopenblas-openmp-dev   # sgemm (OpenBLAS), OpenMP build: our loops and OpenBLAS share one thread pool
    libblis-openmp-dev       # make BLAS=blis: the other sgemm backend (OpenMP build too), compared with OpenBLAS
    libopenblas0-openmp      # the system's libblas.so.3 for PyTorch/numpy in the reference scripts
    libstb-dev               # stb_ds: dynamic arrays and hash maps
    libcmocka-dev            # the C test framework
    libpcre2-dev             # BPE pre-tokenization: the GPT-4/GPT-2 split regexes, with PCRE2's JIT
    libjansson-dev           # JSON: safetensors headers, configs (exact 64-bit integers, duplicate keys refused)
    libxxhash-dev            # XXH3: the checkpoints' checksum at memory speed (header only: compiled in, nothing linked)
    zlib1g-dev               # bin/inspect's page: its maps as zlib streams, which the browser inflates
    libdnnl-dev              # oneDNN: the bf16 matrix products (vdpbf16ps kernels; Debian's OpenBLAS has no sbgemm)
    python3-torch python3-numpy  # the PyTorch parity test
    python3-hypothesis       # make fuzz and make test: the harnesses' readers of results files, fuzzed
    gnuplot-nox              # the comparison plot
    libopenmpi-dev openmpi-bin   # data-parallel bin/train over processes and machines (mpirun)
    clang                    # libFuzzer: make fuzz runs the loaders' fuzzers
    valgrind                 # make valgrind: memcheck of the unit tests and the programs
    chromium                 # make test: the HTML pages in a headless browser (tests/js/browser_test.sh)
)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the default corpus; any npm on the PATH will do.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
