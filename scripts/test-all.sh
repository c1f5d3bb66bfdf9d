#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs what the tests
# need, then `cargo test` over all crates (unit, property, UI and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# System libraries: OpenBLAS and oneDNN are the baselines that mdh-bench
# links (its tests check that every baseline agrees with mdh).
need=()
for pkg in libopenblas-dev libdnnl-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

cargo test --workspace --no-fail-fast
