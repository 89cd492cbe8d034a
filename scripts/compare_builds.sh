#!/usr/bin/env bash
# Compare this checkout's build with the build of another commit on the same
# machine, alternating A B A B so that drift hits both alike:
#   scripts/compare_builds.sh REV [ROUNDS] [BUILD]
# A = build of REV (made in build-compare/REV, from a git worktree), B = BUILD
# (default build). Measures the histogram (4 ranks, 2M updates per rank, courier
# mode, M updates/s), the BFS (R-MAT scale 18, 4 ranks, 8 roots, harmonic mean
# TEPS), level-synchronous, label-correcting (--algorithm async) and
# direction-optimizing (--algorithm hybrid), and the fan-out from handlers
# (apps/fanout --depth 8 --seeds 100, 4 ranks, M records/s), all at the default
# settings, and prints each round and the median ratio B / A (above 1: B is faster).
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
ninja -C "$old" apps/histogram apps/bfs apps/fanout >/dev/null
ninja -C "$new" apps/histogram apps/bfs apps/fanout >/dev/null
mpirun=scripts/mpirun.sh

hist() { "$mpirun" -np 4 "$1/apps/histogram" --mode courier --updates 2M --reps 3 |
         awk '/courier .*updates\/s/ {for (i = 1; i <= NF; i++) if ($i == "M") {print $(i-1); exit}}'; }
bfs() { "$mpirun" -np 4 "$1/apps/bfs" --scale 18 --roots 8 --quiet --algorithm "${2:-levels}" |
        awk '/harmonic mean/ {for (i = 1; i <= NF; i++) if ($i == "mean") {print $(i+1); exit}}'; }

fanout() { "$mpirun" -np 4 "$1/apps/fanout" --depth 8 --seeds 100 |
           awk '/records\/s/ {for (i = 1; i <= NF; i++) if ($i == "M") {print $(i-1); exit}}'; }

printf 'A = %s (%s), B = %s\n' "$sha" "$old" "$new"
printf '%-6s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n' round "hist A" "hist B" \
    "levels A" "levels B" "async A" "async B" "hybrid A" "hybrid B" "fanout A" "fanout B"
ratios_h=() ratios_b=() ratios_a=() ratios_y=() ratios_f=()
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print b / a}'; }
for r in $(seq 1 "$rounds"); do
    ha=$(hist "$old"); hb=$(hist "$new"); ba=$(bfs "$old"); bb=$(bfs "$new")
    aa=$(bfs "$old" async); ab=$(bfs "$new" async)
    ya=$(bfs "$old" hybrid); yb=$(bfs "$new" hybrid)
    fa=$(fanout "$old"); fb=$(fanout "$new")
    printf '%-6s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n' "$r" "$ha" "$hb" "$ba" "$bb" \
        "$aa" "$ab" "$ya" "$yb" "$fa" "$fb"
    ratios_h+=("$(ratio "$ha" "$hb")")
    ratios_b+=("$(ratio "$ba" "$bb")")
    ratios_a+=("$(ratio "$aa" "$ab")")
    ratios_y+=("$(ratio "$ya" "$yb")")
    ratios_f+=("$(ratio "$fa" "$fb")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf 'median ratio B / A (BFS in M TEPS, harmonic mean):\n'
printf '  histogram        %.3f (rounds: %s)\n' "$(median "${ratios_h[@]}")" "${ratios_h[*]}"
printf '  BFS levels       %.3f (rounds: %s)\n' "$(median "${ratios_b[@]}")" "${ratios_b[*]}"
printf '  BFS async        %.3f (rounds: %s)\n' "$(median "${ratios_a[@]}")" "${ratios_a[*]}"
printf '  BFS hybrid       %.3f (rounds: %s)\n' "$(median "${ratios_y[@]}")" "${ratios_y[*]}"
printf '  fan-out          %.3f (rounds: %s)\n' "$(median "${ratios_f[@]}")" "${ratios_f[*]}"
