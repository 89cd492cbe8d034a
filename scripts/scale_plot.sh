#!/usr/bin/env bash
# The scale model's plots: the most messages a rank sends against P, per route and
# aggregation, for the darray's overload pattern (apps/scale_model) and the
# histogram's updates (apps/dedup_model, plain and combining), and for the graph
# patterns (pointer doubling, the neighborhood, the BFS; apps/scale_model). Runs
# the models unless their CSVs exist in OUT already, then draws
# OUT/scale_model.png with gnuplot.
#
#   scripts/scale_plot.sh [BUILD_DIR] [OUT_DIR]      (default: build docs/img)
#   RANKS=64,256,1024   the virtual rank counts (powers of two; 4096 takes about 3
#                       minutes and 2.5 GB for the overload pattern)
#   GRAPH_RANKS=64,256,1024  the rank counts of the graph patterns (1024 takes
#                       about 19 minutes and 9 GiB)
#   BORUVKA_RANKS=64,256  the rank counts of the thesis's Boruvka benchmark (2^13
#                       vertices and 2^17 edges per rank; 1024 takes about 6
#                       minutes, 4096 about 17 minutes and 12.5 GiB); its plot,
#                       OUT/scale_boruvka.png, is the thesis's Figure 5.1a: the
#                       model's time with local work per route and aggregation
#   FRESH=1             run the models even if the CSVs exist
set -euo pipefail
build=${1:-build}
out=${2:-docs/img}
ranks=${RANKS:-64,256,1024}
mkdir -p "$out"
overload="$out/scale_overload.csv"
hist="$out/scale_histogram.csv"
graph="$out/scale_graph.csv"
graph_ranks=${GRAPH_RANKS:-64,256,1024}
boruvka="$out/scale_boruvka.csv"
boruvka_ranks=${BORUVKA_RANKS:-64,256}
if [ "${FRESH:-0}" = 1 ]; then rm -f "$overload" "$hist" "$graph" "$boruvka"; fi
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
if [ ! -s "$graph" ]; then
    "$build/apps/scale_model" --ranks "$graph_ranks" --patterns neighborhood,doubling,bfs \
        --route direct,grid,grid3,hypercube --aggregation none,hash --csv "$graph" >/dev/null
    echo "scale_plot: wrote $graph"
fi
if [ ! -s "$boruvka" ]; then
    "$build/apps/scale_model" --ranks "$boruvka_ranks" --patterns boruvka \
        --vertices-per-rank 8192 --edgefactor 16 --route direct,grid,grid3,hypercube \
        --aggregation none,sort --csv "$boruvka" >/dev/null
    echo "scale_plot: wrote $boruvka"
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
series_graph() { # pattern route aggregation column -> "P value"
    awk -F, -v p="$1" -v r="$2" -v a="$3" -v c="$4" 'NR > 1 && $1 == p && $4 == r &&
        $5 == a { print $2, $c }' "$graph" | sort -n
}
series_hist() { # route-prefix merged -> "P buffers_max"
    awk -F, -v r="$1" -v m="$2" 'NR > 1 && $4 == "updates" && $5 == m &&
        (r == "grid3" ? $2 ~ /^grid:.*x.*x/ : $2 == r) { print $1, $13 }' "$hist" | sort -n
}
gnuplot <<GP
set terminal pngcairo size 1650,1200 noenhanced font ",11"
set output "$out/scale_model.png"
set multiplot layout 2,3 title "The scale model on the simulated transport (scripts/scale_plot.sh); lower is better"
set logscale xy 2
set format y "%.0f"
set xlabel "virtual ranks P"
set grid
set key outside below vertical maxrows 3 font ",9"
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
\$dd << EOD
$(series_graph doubling direct none 6)
EOD
\$dg << EOD
$(series_graph doubling grid hash 6)
EOD
\$d3 << EOD
$(series_graph doubling grid3 hash 6)
EOD
\$dh << EOD
$(series_graph doubling hypercube hash 6)
EOD
\$nd << EOD
$(series_graph neighborhood direct none 10)
EOD
\$ndh << EOD
$(series_graph neighborhood direct hash 10)
EOD
\$ng << EOD
$(series_graph neighborhood grid hash 10)
EOD
\$n3 << EOD
$(series_graph neighborhood grid3 hash 10)
EOD
\$nh << EOD
$(series_graph neighborhood hypercube hash 10)
EOD
\$bd << EOD
$(series_graph bfs direct none 6)
EOD
\$bg << EOD
$(series_graph bfs grid none 6)
EOD
\$b3 << EOD
$(series_graph bfs grid3 none 6)
EOD
\$bh << EOD
$(series_graph bfs hypercube none 6)
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
set title "pointer doubling (R-MAT): busiest rank"
set ylabel "messages per rank, max"
plot \$dd w lp t "direct", \$dg w lp t "2D grid, hash", \$d3 w lp t "3D grid, hash", \$dh w lp t "hypercube, hash"
set title "neighborhood (R-MAT): requests at the busiest owner"
set ylabel "requests"
plot \$nd w lp t "direct", \$ndh w lp t "direct, hash", \$ng w lp t "2D grid, hash", \$n3 w lp t "3D grid, hash", \$nh w lp t "hypercube, hash"
set title "BFS (R-MAT, level-synchronous): busiest rank"
set ylabel "MPI buffers per rank, max"
plot \$bd w lp t "direct", \$bg w lp t "2D grid", \$b3 w lp t "3D grid", \$bh w lp t "hypercube"
unset multiplot
GP
echo "scale_plot: wrote $out/scale_model.png"
series_boruvka() { # route aggregation column -> "P value in ms"
    awk -F, -v r="$1" -v a="$2" -v c="$3" 'NR > 1 && $1 == "boruvka" && $4 == r &&
        $5 == a { print $2, 1000 * $c }' "$boruvka" | sort -n
}
gnuplot <<GP
set terminal pngcairo size 1400,600 noenhanced font ",11"
set output "$out/scale_boruvka.png"
set multiplot layout 1,2 title "Boruvka's first round, R-MAT, 2^13 vertices and 2^17 edges per rank (the thesis's Figure 5.1a); model times of the busiest rank, lower is better"
set logscale x 2
set logscale y 10
set xlabel "virtual ranks P"
set ylabel "predicted ms"
set grid
set key outside below vertical maxrows 4 font ",9"
\$ln << EOD
$(series_boruvka direct none 16)
EOD
\$ls << EOD
$(series_boruvka direct sort 16)
EOD
\$lgn << EOD
$(series_boruvka grid none 16)
EOD
\$l3n << EOD
$(series_boruvka grid3 none 16)
EOD
\$lg << EOD
$(series_boruvka grid sort 16)
EOD
\$l3 << EOD
$(series_boruvka grid3 sort 16)
EOD
\$lhn << EOD
$(series_boruvka hypercube none 16)
EOD
\$lh << EOD
$(series_boruvka hypercube sort 16)
EOD
\$cn << EOD
$(series_boruvka direct none 11)
EOD
\$cs << EOD
$(series_boruvka direct sort 11)
EOD
\$cgn << EOD
$(series_boruvka grid none 11)
EOD
\$c3n << EOD
$(series_boruvka grid3 none 11)
EOD
\$cg << EOD
$(series_boruvka grid sort 11)
EOD
\$c3 << EOD
$(series_boruvka grid3 sort 11)
EOD
\$chn << EOD
$(series_boruvka hypercube none 11)
EOD
\$ch << EOD
$(series_boruvka hypercube sort 11)
EOD
set title "with local work (costs per record measured in each run)"
plot \$ln w lp t "direct, none", \$ls w lp t "plain all-to-all (direct, sort)", \$lgn w lp t "2D grid, none", \$l3n w lp t "3D grid, none", \$lg w lp t "2D grid, sort", \$l3 w lp t "3D grid, sort", \$lhn w lp t "hypercube, none", \$lh w lp t "hypercube, sort"
set title "counts only (alpha 2 us, beta 0.1 ns/B, gamma 10 ns)"
plot \$cn w lp t "direct, none", \$cs w lp t "plain all-to-all (direct, sort)", \$cgn w lp t "2D grid, none", \$c3n w lp t "3D grid, none", \$cg w lp t "2D grid, sort", \$c3 w lp t "3D grid, sort", \$chn w lp t "hypercube, none", \$ch w lp t "hypercube, sort"
unset multiplot
GP
echo "scale_plot: wrote $out/scale_boruvka.png"
