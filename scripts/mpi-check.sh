#!/usr/bin/env bash
# The node layer (NOD) over MPI: the test binary of examples/tests/mpi_families.rs
# under 1 to 4 ranks, every mpirun under a time limit (a rank that never
# enters a collective would otherwise hang the run until CI's own limit);
# first, that the limit fires and that a rank that aborts ends the job.
#
# scripts/mpi-check.sh DIR EXE: EXE run in DIR (its package folder, where
# `cargo test` runs it); scripts/test-all.sh finds both. MDH_MPI_TIMEOUT:
# the limit of each family run in seconds (default 600).
set -euo pipefail
dir=$1 exe=$2
limit=${MDH_MPI_TIMEOUT:-600}

# `mpi_run SECONDS MPIRUN-ARGS...`: mpirun under `timeout` (SIGTERM, then
# SIGKILL 10 s later), saying so when the limit ends it; its status in rc.
mpi_run() {
    local secs=$1
    shift
    rc=0
    (cd "$dir" && timeout --kill-after=10 "$secs" mpirun "$@") || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "mpi-check.sh: TIMEOUT: mpirun $* did not finish within $secs s (a rank waiting in a collective that another rank never entered?)" >&2
    fi
}

# The limit fires: the last rank never enters the collective the other waits in.
mpi_run 15 -np 2 "$exe" --fault hang
if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
    echo "mpi-check.sh: a job with a rank that never enters a collective ended with status $rc, not by the time limit" >&2
    exit 1
fi
# A rank that aborts ends the job with a failure, before the limit.
mpi_run 60 -np 2 "$exe" --fault die
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "mpi-check.sh: a job with an aborting rank ended with status $rc, not a failure of its own" >&2
    exit 1
fi
echo "mpi-check.sh: the time limit fires, an aborting rank fails the job"

# Every family (mpirun fails when any rank exits with a failure).
for np in 1 2 3 4; do
    mpi_run "$limit" -np $np "$exe" 3 $((23 + np))
    if [ "$rc" -ne 0 ]; then
        echo "mpi-check.sh: mpi_families under $np ranks failed (status $rc)" >&2
        exit 1
    fi
done
