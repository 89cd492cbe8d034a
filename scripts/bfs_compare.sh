#!/usr/bin/env bash
# Courier's top-down (level-synchronous) BFS against its direction-optimizing one,
# side by side in one script: for each scale and rank count, the two run
# alternately, ROUNDS times, on the same R-MAT graph and roots. Prints the harmonic
# mean TEPS of each run, the ratio hybrid / top-down within each round, and the
# peak memory per rank.
#
#   scripts/bfs_compare.sh [BUILD_DIR] [ROUNDS]      (default: build 1)
#   SCALES="16 18 20" RANKS="1 2 4" ROOTS=64          (the defaults)
set -euo pipefail
build=${1:-build}
rounds=${2:-1}
scales=${SCALES:-16 18 20}
ranks=${RANKS:-1 2 4}
roots=${ROOTS:-64}
mpirun="$(dirname "$0")/mpirun.sh"

run() { # np scale algorithm -> "teps_M peak_MiB"
    "$mpirun" -np "$1" "$build/apps/bfs" --scale "$2" --roots "$roots" --quiet --algorithm "$3" |
        awk '/harmonic mean/ {for (i = 1; i <= NF; i++) if ($i == "mean") t = $(i + 1)}
             /peak memory per rank/ {for (i = 1; i <= NF; i++) if ($i == "rank") m = $(i + 1)}
             END {print t, m}'
}

echo "| scale | ranks | top-down M TEPS | hybrid M TEPS | hybrid / top-down | peak MiB per rank, top-down | hybrid |"
echo "|---|---|---|---|---|---|---|"
for scale in $scales; do
    for np in $ranks; do
        for ((r = 0; r < rounds; r++)); do
            read -r td tdm < <(run "$np" "$scale" levels)
            read -r hy hym < <(run "$np" "$scale" hybrid)
            ratio=$(awk -v a="$td" -v b="$hy" 'BEGIN {printf "%.2f", b / a}')
            echo "| $scale | $np | $td | $hy | $ratio | $tdm | $hym |"
        done
    done
done
