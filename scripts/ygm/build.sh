#!/usr/bin/env bash
# Build scripts/ygm/ygm_bench.cpp against a checkout of YGM (its public sources:
# LLNL/ygm, header-only; it needs C++20, Debian's libcereal-dev and libboost-dev):
#   scripts/ygm/build.sh YGM_SOURCE_DIR [OUTPUT]   (default output: build/ygm_bench)
# then: YGM_BENCH=build/ygm_bench scripts/container_compare.sh
set -euo pipefail
src=${1:?usage: scripts/ygm/build.sh YGM_SOURCE_DIR [OUTPUT]}
out=${2:-build/ygm_bench}
here=$(dirname "$0")
mpicxx -std=c++20 -O3 -DNDEBUG -I"$src/include" "$here/ygm_bench.cpp" -o "$out" -lpthread
echo "built $out"
