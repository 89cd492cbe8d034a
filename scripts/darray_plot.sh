#!/usr/bin/env bash
# The distributed array's benchmarks as a CSV and a plot: runs apps/darray_bench
# (every pattern, route, aggregation and mode) at NP ranks and writes
# OUT/darray_bench.csv and, if gnuplot is installed, OUT/darray_bench.png: the
# speedup over lock-step direct without aggregation, one panel per pattern.
#
#   scripts/darray_plot.sh [BUILD_DIR] [OUT_DIR]      (default: build docs/img)
#   NP=8 REPS=3 BENCH_ARGS="..."                        (the defaults; extra flags)
#   PLOT_ONLY=1                                         redraw from OUT/darray_bench.csv
set -euo pipefail
build=${1:-build}
out=${2:-docs/img}
np=${NP:-8}
mkdir -p "$out"
csv="$out/darray_bench.csv"
if [ -z "${PLOT_ONLY:-}" ]; then
    rm -f "$csv"
    # shellcheck disable=SC2086
    "$(dirname "$0")/mpirun.sh" -np "$np" "$build/apps/darray_bench" --reps "${REPS:-3}" \
        --csv "$csv" ${BENCH_ARGS:-}
    echo "darray_plot: wrote $csv"
fi
[ -s "$csv" ] || { echo "darray_plot: no $csv to plot" >&2; exit 1; }
if ! command -v gnuplot >/dev/null; then
    echo "darray_plot: gnuplot not found, no plot (apt-get install gnuplot-nox)"
    exit 0
fi
panel() { # pattern -> a data block "label speedup" for gnuplot
    awk -F, -v p="$1" 'NR > 1 && $1 == p {
        label = ($2 == "async") ? "async " $3 : $3 " " $4
        printf "\"%s\" %s\n", label, $8 }' "$csv"
}
gnuplot <<GP
set terminal pngcairo size 1500,560 noenhanced font ",11"
set output "$out/darray_bench.png"
set multiplot layout 1,3 title "darray_bench on $np ranks: speedup over lock-step direct without aggregation (scripts/darray_plot.sh); above the line at 1 is faster"
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set xtics rotate by -60 font ",9"
set bmargin 9
set rmargin 5
set yrange [0:*]
set grid ytics
set ylabel "speedup (times faster than lock-step direct, none)"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb "black" front
unset key
\$n << EOD
$(panel neighborhood)
EOD
\$d << EOD
$(panel doubling)
EOD
\$o << EOD
$(panel overload)
EOD
set title "neighborhood"
plot \$n using 2:xtic(1)
set title "pointer doubling"
plot \$d using 2:xtic(1)
set title "overload"
plot \$o using 2:xtic(1)
unset multiplot
GP
echo "darray_plot: wrote $out/darray_bench.png"
