#!/usr/bin/env bash
# The flush-threshold comparison: BFS and histogram over buffer sizes (1 KiB to
# 16 MiB, doubling) and routes, on NP ranks as virtual nodes of NODE ranks.
# Writes OUT/flush_sweep.csv and, if gnuplot is installed, OUT/flush_sweep.png
# (throughput against threshold, one line per route).
#
#   scripts/flush_sweep.sh [BUILD_DIR] [OUT_DIR]
#   env: NP (4), NODE (2), ROUTES ("direct nlnr hypercube"), SCALE (16), ROOTS (8),
#        UPDATES (histogram updates per rank, 1M), SIZES_KB (1 2 4 ... 16384);
#        PLOT_ONLY=1 redraws from OUT/flush_sweep.csv
set -euo pipefail
build=${1:-build}
out=${2:-.}
np=${NP:-4}
node=${NODE:-2}
routes=(${ROUTES:-direct nlnr hypercube})
sizes=(${SIZES_KB:-1 2 4 8 16 32 64 128 256 512 1024 2048 4096 8192 16384})
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
mkdir -p "$out"
csv="$out/flush_sweep.csv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${PLOT_ONLY:-}" ]; then
    sizes=() # no runs: the table below is not rewritten either
fi
for kb in "${sizes[@]}"; do
    for r in "${routes[@]}"; do
        "$mpirun" -np "$np" "$build/apps/bfs" --scale "${SCALE:-16}" --roots "${ROOTS:-8}" --quiet \
            --algorithm levels --route "$r" --node-size "$node" --buffer-kb "$kb" --csv "$tmp/bfs.csv" >/dev/null
        "$mpirun" -np "$np" "$build/apps/histogram" --mode courier --updates "${UPDATES:-1M}" --reps 3 \
            --route "$r" --node-size "$node" --buffer-kb "$kb" --csv "$tmp/hist.csv" >/dev/null
    done
done

# One table: workload, threshold, route, throughput (M TEPS or M updates/s), sends, memory.
[ -n "${PLOT_ONLY:-}" ] || {
    echo "workload,threshold_bytes,route,throughput_millions,mpi_sends_max,peak_rss_mib"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { printf "bfs,%s,%s,%.3f,%s,%s\n", $c["buffer_bytes"], $c["route"], $c["hmean_teps"] / 1e6,
                 $c["mpi_sends_max"], $c["peak_rss_mib"] }' "$tmp/bfs.csv"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { printf "histogram,%s,%s,%.3f,%s,%s\n", $c["buffer_bytes"], $c["route"], $c["updates_per_s"] / 1e6,
                 $c["mpi_sends_max"], $c["peak_rss_mib"] }' "$tmp/hist.csv"
} > "$csv"
[ -s "$csv" ] || { echo "flush_sweep: no $csv" >&2; exit 1; }
[ -n "${PLOT_ONLY:-}" ] || { echo "flush_sweep: wrote $csv"; column -s, -t < "$csv"; }

if ! command -v gnuplot >/dev/null; then
    echo "flush_sweep: gnuplot not found, no plot (apt-get install gnuplot-nox)"
    exit 0
fi
for w in bfs histogram; do
    for r in "${routes[@]}"; do
        awk -F, -v w="$w" -v r="$r" '$1 == w && $3 == r { print $2 / 1024, $4 }' "$csv" > "$tmp/$w.$r.dat"
    done
done
plot_lines() {
    local w=$1 sep=""
    for r in "${routes[@]}"; do
        printf '%s"%s/%s.%s.dat" using 1:2 with linespoints title "%s"' "$sep" "$tmp" "$w" "$r" "$r"
        sep=", "
    done
}
gnuplot <<GP
set terminal pngcairo size 1300,520 noenhanced font ",11"
set output "$out/flush_sweep.png"
set multiplot layout 1,2 title "Flush threshold, $np ranks as virtual nodes of $node (scripts/flush_sweep.sh); higher is better"
set logscale x 2
set xlabel "flush threshold (KiB)"
set grid
set yrange [0:*]
set key outside below horizontal title "route"
set title "BFS, R-MAT scale ${SCALE:-16}"
set ylabel "harmonic mean M TEPS"
plot $(plot_lines bfs)
set title "histogram, ${UPDATES:-1M} updates per rank"
set ylabel "M updates/s"
plot $(plot_lines histogram)
unset multiplot
GP
echo "flush_sweep: wrote $out/flush_sweep.png"
