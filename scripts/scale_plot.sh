#!/usr/bin/env bash
# The scale model's plots: the most messages a rank sends against P, per route and
# aggregation, for the darray's overload pattern (apps/scale_model) and the
# histogram's updates (apps/dedup_model, plain and combining). Runs both models
# unless their CSVs exist in OUT already, then draws OUT/scale_model.png with
# gnuplot.
#
#   scripts/scale_plot.sh [BUILD_DIR] [OUT_DIR]      (default: build docs/img)
#   RANKS=64,256,1024   the virtual rank counts (powers of two; 4096 takes about 10
#                       minutes and 2.5 GB for the overload pattern)
#   FRESH=1             run the models even if the CSVs exist
set -euo pipefail
build=${1:-build}
out=${2:-docs/img}
ranks=${RANKS:-64,256,1024}
mkdir -p "$out"
overload="$out/scale_overload.csv"
hist="$out/scale_histogram.csv"
if [ "${FRESH:-0}" = 1 ]; then rm -f "$overload" "$hist"; fi
if [ ! -s "$overload" ]; then
    "$build/apps/scale_model" --ranks "$ranks" --patterns overload --csv "$overload" >/dev/null
    echo "scale_plot: wrote $overload"
fi
if [ ! -s "$hist" ]; then
    IFS=, read -r -a ps <<<"$ranks"
    for p in "${ps[@]}"; do
        # 3D grid dimensions for a power of two, as equal as they go
        e=0; while [ $((1 << e)) -lt "$p" ]; do e=$((e + 1)); done
        a=$((e / 3 + (e % 3 > 0))); b=$((e / 3 + (e % 3 > 1))); c=$((e / 3))
        "$build/apps/dedup_model" --ranks "$p" --workload updates --node-size 48 \
            --route "direct,nlnr,grid,grid:$((1 << a))x$((1 << b))x$((1 << c)),hypercube" \
            --csv "$hist" >/dev/null
    done
    echo "scale_plot: wrote $hist"
fi
if ! command -v gnuplot >/dev/null; then
    echo "scale_plot: gnuplot not found, no plot (apt-get install gnuplot-nox)"
    exit 0
fi
series_overload() { # route aggregation -> "P msgs_max" lines
    awk -F, -v r="$1" -v a="$2" 'NR > 1 && $1 == "overload" && $4 == r && $5 == a {
        print $2, $6 }' "$overload" | sort -n
}
series_reached() { # route aggregation -> "P requests reaching rank 0"
    awk -F, -v r="$1" -v a="$2" 'NR > 1 && $1 == "overload" && $4 == r && $5 == a {
        print $2, $10 }' "$overload" | sort -n
}
series_hist() { # route-prefix merged -> "P buffers_max"
    awk -F, -v r="$1" -v m="$2" 'NR > 1 && $4 == "updates" && $5 == m &&
        (r == "grid3" ? $2 ~ /^grid:.*x.*x/ : $2 == r) { print $1, $13 }' "$hist" | sort -n
}
gnuplot <<GP
set terminal pngcairo size 1500,480 noenhanced
set output "$out/scale_model.png"
set multiplot layout 1,3 title "The scale model on the simulated transport (scripts/scale_plot.sh)"
set logscale xy 2
set xlabel "virtual ranks P"
set grid
set key top left font ",9"
\$od << EOD
$(series_overload direct none)
EOD
\$og << EOD
$(series_overload grid none)
EOD
\$o3 << EOD
$(series_overload grid3 none)
EOD
\$oh << EOD
$(series_overload hypercube none)
EOD
\$rd << EOD
$(series_reached direct none)
EOD
\$rg << EOD
$(series_reached grid sort)
EOD
\$r3 << EOD
$(series_reached grid3 sort)
EOD
\$rh << EOD
$(series_reached hypercube sort)
EOD
\$rhn << EOD
$(series_reached hypercube none)
EOD
\$hd << EOD
$(series_hist direct 0)
EOD
\$hn << EOD
$(series_hist nlnr 0)
EOD
\$hg << EOD
$(series_hist grid 0)
EOD
\$h3 << EOD
$(series_hist grid3 0)
EOD
\$hh << EOD
$(series_hist hypercube 0)
EOD
\$hhc << EOD
$(series_hist hypercube 1)
EOD
set title "overload: messages of the busiest rank"
set ylabel "messages per rank, max"
plot \$od w lp t "direct", \$og w lp t "2D grid", \$o3 w lp t "3D grid", \$oh w lp t "hypercube"
set title "overload: requests reaching rank 0"
set ylabel "requests"
set yrange [256:*]
plot \$rd w lp t "direct", \$rhn w lp t "hypercube, no aggregation", \$rg w lp t "2D grid, sort", \$r3 w lp t "3D grid, sort", \$rh w lp t "hypercube, sort"
set yrange [*:*]
set title "histogram updates, skew 4: busiest rank"
set ylabel "MPI buffers per rank, max"
plot \$hd w lp t "direct", \$hn w lp t "nlnr (nodes of 48)", \$hg w lp t "2D grid", \$h3 w lp t "3D grid", \$hh w lp t "hypercube", \$hhc w lp t "hypercube, combining"
unset multiplot
GP
echo "scale_plot: wrote $out/scale_model.png"
