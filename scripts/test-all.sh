#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine: installs what the tests
# need, then `cargo test` over all crates (unit, property, UI and doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# System libraries: OpenBLAS and oneDNN are the baselines that mdh-bench
# links (its tests check that every baseline agrees with mdh). PoCL (with the
# ocl-icd loader, libOpenCL.so.1) runs the OpenCL kernels on the CPU; mdh
# loads OpenCL at run time, so no -dev package is needed to build. OpenMPI
# runs the node layer (mdh's `mpi` feature; the `mpi` crate's bindings need
# libclang at build time). gcc builds mdh-bench's c-openmp peers (its
# libgomp is the OpenMP runtime they link); g++ the CPU execution of CUDA
# C (mdh-gpu's cuda_sim) in the CUDA tests.
need=()
for pkg in libopenblas-dev libdnnl-dev ocl-icd-libopencl1 pocl-opencl-icd \
    libopenmpi-dev openmpi-bin libclang1-14 libclang-common-14-dev gcc g++; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

# NVRTC for the CUDA tests: compiles CUDA C without a GPU. PyPI's
# nvidia-cuda-nvrtc-cu12 wheel ships libnvrtc.so.12; it is installed once for
# the user (into the active virtualenv when there is one) and its lib folder
# goes on LD_LIBRARY_PATH, where cudarc looks for it. MDH_REQUIRE_NVRTC makes
# the CUDA tests fail instead of skipping when NVRTC cannot be loaded (or g++,
# which examples/tests/cuda.rs needs to execute every family's CUDA kernels on
# the CPU; that test runs in the workspace run below, the examples' dev
# dependencies turn on mdh's `cuda` feature).
nvrtc_lib() {
    python3 -c 'import os, nvidia.cuda_nvrtc as m
for p in m.__path__:
    if os.path.exists(os.path.join(p, "lib", "libnvrtc.so.12")): print(os.path.join(p, "lib")); break' 2>/dev/null || true
}
# Installs a wheel for the user (into the active virtualenv when there is one).
pip_install() {
    if ! python3 -m pip --version >/dev/null 2>&1; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-pip
    fi
    if [ -n "${VIRTUAL_ENV:-}" ]; then
        python3 -m pip install -q "$1"
    else
        # --break-system-packages: Debian's python refuses even --user installs without it
        python3 -m pip install -q --user "$1" 2>/dev/null \
            || python3 -m pip install -q --user --break-system-packages "$1"
    fi
}
nvrtc_dir=$(nvrtc_lib)
if [ -z "$nvrtc_dir" ]; then
    pip_install nvidia-cuda-nvrtc-cu12
    nvrtc_dir=$(nvrtc_lib)
fi
if [ -z "$nvrtc_dir" ]; then
    echo "test-all.sh: nvidia-cuda-nvrtc-cu12 is installed but libnvrtc.so.12 was not found" >&2
    exit 1
fi
export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MDH_REQUIRE_NVRTC=1
# nvdisasm for the SASS tests (the machine code NVRTC makes of the generated
# kernels, read without a GPU): PyPI's nvidia-cuda-nvdisasm wheel, found by
# mdh-gpu's `sass::nvdisasm` in the wheel's folder. MDH_REQUIRE_NVDISASM
# makes those tests fail instead of skipping when it is missing.
nvdisasm_bin() {
    python3 -c 'import glob, os, nvidia
for p in nvidia.__path__:
    for f in sorted(glob.glob(os.path.join(p, "*", "bin", "nvdisasm")), reverse=True): print(f); raise SystemExit' 2>/dev/null || true
}
if [ -z "$(command -v nvdisasm || nvdisasm_bin)" ]; then
    pip_install nvidia-cuda-nvdisasm
fi
export MDH_REQUIRE_NVDISASM=1
# The OpenCL tests (every example family on PoCL) fail instead of skipping
# when no OpenCL device is found; those of large local tiles (up to 160 KiB)
# when the device has less local memory, which PoCL's CPU device has as
# POCL_CPU_LOCAL_MEM_SIZE says. (No MDH_REQUIRE_CUDA_DEVICE: no GPU here.)
export MDH_REQUIRE_OPENCL=1 MDH_REQUIRE_LOCAL_MEM=1 POCL_CPU_LOCAL_MEM_SIZE=262144

# The random kernels (examples/random, tests/random_kernels.rs) are drawn
# at build time from MDH_RANDOM_SEED: a new seed per run unless it is set,
# so that every run tries other kernels; the seed of a failing run draws
# the same ones again.
if [ -z "${MDH_RANDOM_SEED:-}" ]; then
    MDH_RANDOM_SEED=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
fi
export MDH_RANDOM_SEED
echo "test-all.sh: random kernels of seed $MDH_RANDOM_SEED (MDH_RANDOM_SEED=$MDH_RANDOM_SEED reproduces them)"

# MPI (the node layer's tests) on this machine only: loopback and shared
# memory, no ssh, more ranks than cores, and as root too.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader \
    OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm=isolated
# A one-shot build on a fresh machine gains nothing from incremental state,
# which would double the target folder (CI's disk is not large). Line
# tables only in the UI tests' own build too (trybuild's crate has no
# profile of ours; the workspace's dev profile says the same).
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
# The whole run leaves about 2.4 GiB in the target folder (a clean run on
# 2026-11-27: 2.6 GiB, 0.27 of it the UI tests' full debug info since
# cut): say up front when the disk is short of that, so that a build that
# fails later for want of space is explained.
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$target_dir"
free_mib=$(( $(df -Pk "$target_dir" | awk 'NR == 2 { print $4 }') / 1024 ))
if [ "$free_mib" -lt 4096 ]; then
    echo "test-all.sh: warning: $free_mib MiB free for $target_dir; the test build needs about 2.4 GiB more than what is already built there" >&2
fi

# Every workspace run below with the same features, so that the example
# kernels (the longest build) compile once: `mpi` adds their node layer
# (tests/mpi_families.rs, one rank here; `mdh-bench --mpi`).
features=(--features mdh-example-kernels/mpi,mdh-bench/mpi)

# Lints of the compiler and runtime crates first (a few minutes at most,
# before the long runs): `[workspace.lints]` and clippy's defaults, as
# errors. The example kernels' crates stay out (their build is the longest,
# and their code is generated). With every feature of those crates, so
# that the OpenCL, CUDA and MPI code is linted too.
# The structure the code keeps (docs/ARCHITECTURE.md, "Rules the code
# keeps"): no import circles, no file over 900 lines before its tests, no
# too_many_arguments in the runtime crates.
python3 scripts/structure-check.py
if ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add clippy
fi
cargo clippy -p mdh-rt -p mdh-core -p mdh-macros -p mdh-gpu -p mdh -p mdh-tune --all-targets \
    --features mdh-gpu/opencl,mdh-gpu/sim,mdh/reference,mdh/opencl,mdh/cuda,mdh/mpi -- -D warnings
# Their docs: every intra-doc link resolves (a renamed item breaks them).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p mdh-rt -p mdh-core -p mdh-macros -p mdh-gpu -p mdh \
    -p mdh-tune --features mdh-gpu/opencl,mdh-gpu/sim,mdh/reference,mdh/opencl,mdh/cuda,mdh/mpi

# The GPU tests' random plans and sizes: new ones each run, from this
# seed (said here, so that a failing run's cases can be drawn again).
export MDH_TEST_SEED=${MDH_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "test-all.sh: MDH_TEST_SEED=$MDH_TEST_SEED"

# MDH_STREAM=always: plans with `stream` stream at the tests' small sizes
# too (by default only outputs larger than the cores' L2 caches stream).
MDH_STREAM=always cargo test --workspace "${features[@]}" --no-fail-fast
# The example binaries (each holds its own kernel; `cargo test` skips them).
cargo check -p mdh-examples --bins

# The test binaries the workspace run built, found again without a second
# build (a `cargo test` of fewer targets unifies features differently and
# would compile the example kernels again). `test_bin NAME` prints the
# package folder of test NAME (where `cargo test` runs it) and its path.
artifacts=$(cargo test --workspace "${features[@]}" --no-run --message-format=json)
test_bin() {
    python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(os.path.dirname(m["manifest_path"]), m["executable"])' "$1" <<<"$artifacts"
}
# The AVX2 and baseline task bodies of every example family (this machine
# may run AVX-512 ones otherwise; MDH_ISA caps the instruction set).
for isa in avx2 baseline; do
  for t in plans properties; do
    read -r dir exe < <(test_bin $t)
    (cd "$dir" && MDH_STREAM=always MDH_ISA=$isa "$exe")
  done
  # The random kernels' CPU test too (their GPU tests do not depend on it).
  read -r dir exe < <(test_bin random_kernels)
  (cd "$dir" && MDH_ISA=$isa "$exe" --exact cpu)
done
# The pair bodies of bf16 products (AVX-512 BF16's `vdpbf16ps` where the
# CPU has it; the default run above ran them natively there), emulated in
# the AVX-512 (where the CPU has it) and AVX2 bodies, so that every CPU runs them.
for isa in avx512 avx2; do
  for t in plans properties; do
    read -r dir exe < <(test_bin $t)
    (cd "$dir" && MDH_ISA=$isa MDH_BF16_PAIRS=emulate "$exe" bf16)
  done
done
# The CUDA runtime (NVRTC, CPU execution of CUDA C, no-GPU errors; on a GPU
# machine also the device runs).
cargo test -p mdh-gpu --features sim --no-fail-fast
# The OpenCL runtime on PoCL (builds, launches, no-ICD errors);
# MDH_REQUIRE_OPENCL makes its device tests fail instead of skipping.
cargo test -p mdh-gpu --features opencl --no-fail-fast

# The node layer (NOD) over MPI: every example family under 1 to 4 ranks on
# this machine (the test binary the workspace run built), each mpirun under
# a time limit, which is shown to fire first.
read -r dir exe < <(test_bin mpi_families)
./scripts/mpi-check.sh "$dir" "$exe"
