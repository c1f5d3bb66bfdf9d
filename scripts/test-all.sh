#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs what the tests
# need, then `cargo test` over all crates (unit, property, UI and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# No system packages are needed yet: the CPU back end is pure Rust. The OpenCL
# (PoCL) and CUDA (NVRTC) back ends will add their installs here.

cargo test --workspace --no-fail-fast
