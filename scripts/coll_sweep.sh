#!/usr/bin/env bash
# Collective latency at several rank counts: runs apps/coll_bench for each P, keeps
# its CSV, prints the best Courier algorithm per (P, size) next to MPI, and draws a
# heat map of best-Courier / MPI latency, labelled with the best algorithm.
#
#   scripts/coll_sweep.sh [BUILD_DIR] [OUT_DIR]
#   env: RANKS ("2 3 4 5 6 7 8"), REPS (100); PLOT_ONLY=1 redraws from OUT/coll_sweep.csv
set -euo pipefail
build=${1:-build}
out=${2:-.}
mpirun="$(dirname "$0")/mpirun.sh"  # Open MPI settings for root and oversubscription
mkdir -p "$out"
csv="$out/coll_sweep.csv"
if [ -z "${PLOT_ONLY:-}" ]; then
    rm -f "$csv"
    for np in ${RANKS:-2 3 4 5 6 7 8}; do
        "$mpirun" -np "$np" "$build/apps/coll_bench" --reps "${REPS:-100}" --csv "$csv" >/dev/null
    done
fi
[ -s "$csv" ] || { echo "coll_sweep: no $csv" >&2; exit 1; }

# best Courier algorithm per (collective, P, bytes); the auto rows name the algorithm they ran
best=$(awk -F, 'NR > 1 {
    key = $2 "," $1 "," $3
    if ($4 == "mpi") mpi[key] = $5
    else {
        if (!(key in b) || $5 < b[key]) { b[key] = $5; name[key] = $4 }
    }
}
END { for (k in b) printf "%s,%s,%.2f,%.2f\n", k, name[k], b[k], b[k] / mpi[k] }' "$csv" |
    sort -t, -k1,1 -k2,2n -k3,3n)
echo "collective,ranks,bytes,best_courier,best_us,best_over_mpi" > "$out/coll_best.csv"
echo "$best" >> "$out/coll_best.csv"
echo "| collective | ranks | bytes | best Courier algorithm | best / MPI |"
echo "|---|---|---|---|---|"
awk -F, '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $6 }' <<<"$best"

command -v gnuplot >/dev/null || { echo "coll_sweep: no gnuplot, no plot"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ranks=(${RANKS:-2 3 4 5 6 7 8})
xmin=$(printf "%s\n" "${ranks[@]}" | sort -n | head -1)
xmax=$(printf "%s\n" "${ranks[@]}" | sort -n | tail -1)
for c in allreduce allgather; do
    # short names, so that a cell's label fits in its square
    awk -F, -v c="$c" '$1 == c { n = $4; sub(/dissemination/, "dissem", n); sub(/recdoubling/, "recdbl", n)
                                 print $2, $3, $6, n }' <<<"$best" > "$tmp/$c.dat"
done
gnuplot <<GP
set terminal pngcairo size 1600,680 noenhanced font ",11"
set output "$out/coll_best.png"
set multiplot layout 1,2 title "Best Courier algorithm per cell, and its latency / MPI's (below 1: Courier faster); scripts/coll_sweep.sh"
set palette defined (0.3 "#1a9850", 1 "#ffffbf", 2.5 "#d73027")
set cbrange [0.3:2.5]
set cblabel "Courier latency / MPI latency"
set xlabel "ranks"
set xrange [$xmin - 0.5:$xmax + 0.5]
set xtics 1
set lmargin 22
set rmargin 12
set key off
set title "allreduce (sum)"
set ylabel "bytes"
set ytics ("4 (1 int)" 0, "2040 (255 doubles)" 1)
set yrange [-0.5:1.5]
plot "$tmp/allreduce.dat" using 1:(\$2 == 4 ? 0 : 1):3 with points pt 5 ps 8 palette, \
     "" using 1:(\$2 == 4 ? 0 : 1):(sprintf("%s\n%.2f", strcol(4), \$3)) with labels font ",8"
set title "allgather"
set ylabel "bytes per rank"
set ytics ("8" 0, "64" 1, "512" 2, "4K" 3, "32K" 4, "256K" 5, "1M" 6)
set yrange [-0.5:6.5]
plot "$tmp/allgather.dat" using 1:(log(\$2 / 8) / log(8)):3 with points pt 5 ps 6 palette, \
     "" using 1:(log(\$2 / 8) / log(8)):(sprintf("%s\n%.2f", strcol(4), \$3)) with labels font ",8"
unset multiplot
GP
echo "coll_sweep: wrote $csv, $out/coll_best.csv and $out/coll_best.png"
