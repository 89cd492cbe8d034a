#!/usr/bin/env bash
# The SpMV under each exchange plan on the 15 matrices shaped like the
# message-sharing thesis's Table 6.1 (docs/plan.md): for each, apps/spmv at NP ranks
# on like:NAME/D, every plan verified against the sequential product, and one table
# of the median time per iteration (microseconds) and the most messages a rank
# sends, per plan, with the persistent sender (MPI_Start each iteration).
#
#   scripts/spmv_like.sh [BUILD_DIR] [NP] [D] [ITERATIONS] [REPS]
#                        (default: build 8 8 100 3)
#   PARTITIONER=metis    partition with METIS (a build with libmetis-dev) instead
#                        of row blocks
set -euo pipefail
build=${1:-build}
np=${2:-8}
div=${3:-8}
iterations=${4:-100}
reps=${5:-3}
partitioner=${PARTITIONER:-block}
here=$(dirname "$0")
names="cbuckle msc10848 fe_rotor sparsine coAuthorsDBLP net125 nd3k GaAsH6 pkustk04 gupta2
       TSOPF_FS_b300_c2 pattern1 SiO2 human_gene_2 coPapersCiteseer"

echo "spmv on $np ranks, like:NAME/$div, $partitioner partition, $iterations iterations x $reps" \
     "reps, persistent sender ($(date -u +%F), $(hostname))"
echo
echo "| matrix | direct us | stfw us | sharing us | sharing / direct | direct msgs | stfw msgs | sharing msgs |"
echo "|---|---|---|---|---|---|---|---|"
for name in $names; do
    out=$("$here/mpirun.sh" -np "$np" "$build/apps/spmv" --graph "like:$name/$div" \
          --partitioner "$partitioner" --senders persistent --iterations "$iterations" \
          --reps "$reps") || { echo "spmv failed on like:$name/$div" >&2; exit 1; }
    grep -q "every plan verified" <<< "$out" || { echo "spmv did not verify like:$name/$div" >&2; exit 1; }
    awk -v name="$name" -F'|' '
        $3 ~ /persistent/ {gsub(/ /, "", $2); us[$2] = $8 + 0; msgs[$2] = $4 + 0}
        END {printf "| %s | %.1f | %.1f | %.1f | %.2f | %d | %d | %d |\n", name,
                    us["direct"], us["stfw"], us["sharing"], us["sharing"] / us["direct"],
                    msgs["direct"], msgs["stfw"], msgs["sharing"]}' <<< "$out"
done
