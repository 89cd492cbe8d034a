#!/usr/bin/env bash
# mpirun with what a laptop, a CI box or a root shell needs, so every command in the
# README and docs runs as written:
#   OMPI_ALLOW_RUN_AS_ROOT=1, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   (only when run as root)
#   OMPI_MCA_rmaps_base_oversubscribe=1   more ranks than cores (8 ranks on 2 cores)
#   OMPI_MCA_btl_base_warn_component_unused=0   no warning about unused network components
# Variables already set in the environment win. Usage: scripts/mpirun.sh -np 4 PROGRAM [ARGS]
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
fi
export OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1}
export OMPI_MCA_btl_base_warn_component_unused=${OMPI_MCA_btl_base_warn_component_unused:-0}
exec mpirun "$@"
