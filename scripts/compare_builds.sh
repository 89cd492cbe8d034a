#!/usr/bin/env bash
# Compare this checkout's build with the build of another commit on the same
# machine, alternating A B A B so that drift hits both alike:
#   scripts/compare_builds.sh REV [ROUNDS] [BUILD]
# A = build of REV (made in build-compare/REV, from a git worktree), B = BUILD
# (default build). Measures the histogram (4 ranks, 2M updates per rank, courier
# mode, M updates/s) and the BFS (R-MAT scale 18, 4 ranks, 8 roots, harmonic mean
# TEPS), and prints each round and the median ratio B / A (above 1: B is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/compare_builds.sh REV [ROUNDS] [BUILD]}
rounds=${2:-3}
new=${3:-build}
sha=$(git rev-parse --short "$rev")
tree=build-compare/src-$sha
old=build-compare/$sha
if [ ! -d "$tree" ]; then
    mkdir -p build-compare
    git worktree add --detach "$tree" "$sha" >/dev/null
fi
[ -f "$old/build.ninja" ] || meson setup "$old" "$tree" >/dev/null
ninja -C "$old" apps/histogram apps/bfs >/dev/null
ninja -C "$new" apps/histogram apps/bfs >/dev/null
mpirun=scripts/mpirun.sh

hist() { "$mpirun" -np 4 "$1/apps/histogram" --mode courier --updates 2M --reps 3 |
         awk '/courier .*updates\/s/ {for (i = 1; i <= NF; i++) if ($i == "M") {print $(i-1); exit}}'; }
bfs() { "$mpirun" -np 4 "$1/apps/bfs" --scale 18 --roots 8 --quiet |
        awk '/harmonic mean/ {for (i = 1; i <= NF; i++) if ($i == "mean") {print $(i+1); exit}}'; }

printf 'A = %s (%s), B = %s\n' "$sha" "$old" "$new"
printf '%-6s %14s %14s %12s %12s\n' round "hist A M/s" "hist B M/s" "bfs A MTEPS" "bfs B MTEPS"
ratios_h=() ratios_b=()
for r in $(seq 1 "$rounds"); do
    ha=$(hist "$old"); hb=$(hist "$new"); ba=$(bfs "$old"); bb=$(bfs "$new")
    printf '%-6s %14s %14s %12s %12s\n' "$r" "$ha" "$hb" "$ba" "$bb"
    ratios_h+=("$(awk -v a="$ha" -v b="$hb" 'BEGIN {print b / a}')")
    ratios_b+=("$(awk -v a="$ba" -v b="$bb" 'BEGIN {print b / a}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf 'median ratio B / A: histogram %.3f (rounds: %s), BFS %.3f (rounds: %s)\n' \
    "$(median "${ratios_h[@]}")" "${ratios_h[*]}" "$(median "${ratios_b[@]}")" "${ratios_b[*]}"
