#!/usr/bin/env bash
# A multi-node MPI job on one machine: N emulated hosts, each a UTS namespace with a
# host name of its own, so that MPI (and Courier's node detection) sees N nodes;
# shared memory within a host, TCP over loopback between hosts.
#
#   scripts/hosts.sh [--hosts N] [--per-host K[,K...]] [--mpi auto|openmpi|mpich]
#                    [--bind] [--dry-run] PROGRAM [ARGS...]
#
#   --hosts N        emulated hosts, 1 to 16 (default 2)
#   --per-host LIST  ranks on each host: one count for all, or one per host
#                    (--hosts 3 --per-host 1,2,1); default 1
#   --mpi M          the MPI the program is built with: openmpi (mpirun), mpich
#                    (mpiexec.mpich), or auto (default: mpich if PROGRAM links
#                    libmpich, else openmpi)
#   --bind           leave the ranks bound as the MPI binds them by default (each
#                    host's daemon binds its ranks from core 0, so the hosts' ranks
#                    share cores): the layout of a slow link, for measuring
#   --dry-run        print the launch command instead of running it
#   -h, --help       this text
#
# Host i is named courier-host<i>. Each host's daemon (Open MPI's orted, MPICH's
# proxy) is started by a launcher that stands in for ssh: it runs the daemon under
# `unshare -u` with that host's name (root, or a user allowed to create namespaces).
# The hosts together oversubscribe this machine's cores without the MPI knowing, so
# the ranks yield while they wait (Open MPI: mpi_yield_when_idle) and are not bound
# to cores unless --bind. The environment reaches every rank as it is (no -x needed).
# The job's exit status is the program's; the hostfile and the launcher live in a
# temporary directory removed at exit, and an interrupted run stops its job.
set -euo pipefail

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
fail() { echo "hosts.sh: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[1-9][0-9]{0,2}$ ]] && [ "$1" -le "$2" ]; }

hosts=2 per=1 mpi=auto bind=0 dry=0
while [ $# -gt 0 ]; do
    case $1 in
    --hosts) [ $# -ge 2 ] || fail "--hosts needs a count"; hosts=$2; shift ;;
    --per-host) [ $# -ge 2 ] || fail "--per-host needs a count or a list"; per=$2; shift ;;
    --mpi) [ $# -ge 2 ] || fail "--mpi needs auto, openmpi or mpich"; mpi=$2; shift ;;
    --bind) bind=1 ;;
    --dry-run) dry=1 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) fail "unknown option '$1' (see --help)" ;;
    *) break ;;
    esac
    shift
done
[ $# -gt 0 ] || fail "no program to run (see --help)"
is_count "$hosts" 16 || fail "--hosts '$hosts' is not a count from 1 to 16"
IFS=, read -r -a counts <<<"$per"
if [ ${#counts[@]} -eq 1 ]; then
    for ((i = 1; i < hosts; i++)); do counts+=("${counts[0]}"); done
fi
[ ${#counts[@]} -eq "$hosts" ] || fail "--per-host '$per' names ${#counts[@]} hosts, not $hosts"
total=0
for c in "${counts[@]}"; do
    is_count "$c" 64 || fail "--per-host '$per': '$c' is not a count from 1 to 64"
    total=$((total + c))
done
program=$(command -v "$1") || fail "'$1' is not a program that can be run"
if [ "$mpi" = auto ]; then
    mpi=openmpi
    case $(ldd "$program" 2>/dev/null || true) in *libmpich*) mpi=mpich ;; esac
fi
case $mpi in
openmpi) command -v mpirun >/dev/null || fail "mpirun is missing (apt-get install openmpi-bin)" ;;
mpich) command -v mpiexec.mpich >/dev/null || fail "mpiexec.mpich is missing (apt-get install mpich)" ;;
*) fail "--mpi '$mpi' is not auto, openmpi or mpich" ;;
esac
command -v unshare >/dev/null || fail "unshare is missing (apt-get install util-linux)"
unshare -u true 2>/dev/null ||
    fail "cannot create a UTS namespace here (unshare -u): run as root, or allow unprivileged user namespaces"

work=$(mktemp -d "${TMPDIR:-/tmp}/courier-hosts-XXXXXX")
job=
cleanup() { rm -rf "$work"; }
stop() { [ -z "$job" ] || kill -TERM "$job" 2>/dev/null || true; wait 2>/dev/null || true; cleanup; exit 130; }
trap cleanup EXIT
trap stop INT TERM

# The launcher the MPI calls as it would call ssh: [OPTIONS] HOST COMMAND... It
# starts the host's daemon in a namespace of its own named HOST, through a shell, as
# a remote shell would.
cat >"$work/launch" <<'EOF'
#!/bin/sh
while [ "${1#-}" != "$1" ]; do shift; done # ssh options some launchers pass first
host=$1
shift
exec unshare -u /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$1"' "$host" "$*"
EOF
chmod +x "$work/launch"

names=()
for ((i = 1; i <= hosts; i++)); do names+=("courier-host$i"); done

if [ "$mpi" = openmpi ]; then
    for ((i = 0; i < hosts; i++)); do
        echo "${names[$i]} slots=${counts[$i]} max_slots=${counts[$i]}"
    done >"$work/hostfile"
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    launch=(mpirun --hostfile "$work/hostfile" -np "$total" --map-by slot
            --mca plm rsh --mca plm_rsh_agent "$work/launch" --mca plm_rsh_no_tree_spawn 1
            --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo
            --mca btl self,vader,tcp --mca mpi_yield_when_idle 1
            --mca btl_base_warn_component_unused 0)
    [ $bind = 1 ] || launch+=(--bind-to none)
else
    list=
    for ((i = 0; i < hosts; i++)); do list+="${list:+,}${names[$i]}:${counts[$i]}"; done
    launch=(mpiexec.mpich -launcher ssh -launcher-exec "$work/launch" -hosts "$list"
            -n "$total" -iface lo)
    [ $bind = 0 ] || launch+=(-bind-to core)
fi

if [ $dry = 1 ]; then
    echo "${launch[*]} $program ${*:2}"
    exit 0
fi
status=0
"${launch[@]}" "$program" "${@:2}" &
job=$!
wait "$job" || status=$?
job=
exit "$status"
