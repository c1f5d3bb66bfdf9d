#!/usr/bin/env bash
# The checks of a lent GPU machine, prepared here and run there in one call.
#
#   scripts/gpu-check.sh pack         # here: builds what the checks run and
#                                     # packs it into .dev/bins.tar.xz
#   scripts/gpu-check.sh run          # there (the repository root, $OUT set):
#                                     # unpacks and runs the checks
#
# The GPU machine has CUDA (NVRTC, cuBLAS, the driver), g++ and Python but
# no Rust, so the test binaries (debug, as CI builds them), mdh-bench, the
# launch-overhead example and the libraries mdh-bench links (OpenBLAS,
# oneDNN) travel from here: `.dev/` is ignored by git (.git/info/exclude)
# and goes with the call as a carried path (`carry: [".dev"]`). What runs
# there, in order of value, each under its own timeout and all under
# DEADLINE seconds (default 530: a call may last 600): the CUDA tests with
# MDH_REQUIRE_CUDA_DEVICE=1, launch_overhead, `mdh-bench --quick` with the
# analytical defaults (MDH_IGNORE_DEVICE_ENTRIES=1), as built, then
# `mdh-bench --quick` under MDH_AUTOTUNE=1 (run-time tuning,
# AUTOTUNE_BUDGET seconds per call, default 10). Logs, CSVs and the tuning
# cache land in $OUT; the kept plans are printed ("mdh: tuning K: … : GpuPlan
# { … }") for config entries. `run` exits with a failure when a test run or
# a bench failed (each is still run: one call shows all).
set -uo pipefail
cd "$(dirname "$0")/.."

pack() {
    set -e
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
    local json tests=() f
    json=$(cargo test --no-run --message-format=json -p mdh-example-kernels --test cuda \
        -p mdh-gpu --test cuda_runtime -p mdh-tune --test gpu --features mdh-gpu/sim)
    mapfile -t tests < <(python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])' <<<"$json")
    cargo build --release -p mdh-bench -p mdh-tune
    cargo build --release -p mdh-example-kernels --example launch_overhead
    local stage
    stage=$(mktemp -d)
    mkdir -p "$stage/target/debug/deps" "$stage/target/release/examples" "$stage/.dev/lib"
    for f in "${tests[@]}" target/debug/mdh-tune target/release/mdh-bench \
        target/release/examples/launch_overhead; do
        f=${f#"$PWD/"}
        strip --strip-debug -o "$stage/$f" "$f"
    done
    # What mdh-bench links that the GPU machine's image may lack.
    for lib in $(ldd target/release/mdh-bench | awk '/=> \// {print $3}' \
        | grep -E 'openblas|dnnl|gfortran|quadmath|gomp|OpenCL'); do
        cp -L "$lib" "$stage/.dev/lib/"
    done
    # Where they were built: the paths compiled into the tests.
    echo "$PWD" > "$stage/.dev/built-in"
    mkdir -p .dev
    tar -cf - -C "$stage" target .dev | xz -T2 -6 > .dev/bins.tar.xz
    rm -rf "$stage"
    echo "packed: $(du -h .dev/bins.tar.xz | cut -f1) in .dev/bins.tar.xz (the call carries .dev, 64 MiB at most)"
}

run() {
    local t0 deadline root rc
    local failed=()
    t0=$(date +%s)
    deadline=${DEADLINE:-530}
    root=$PWD
    left() { echo $((deadline - ($(date +%s) - t0))); }
    stage() { echo; echo "=== $1 (t=$(($(date +%s) - t0)) s, left $(left) s)"; }
    mkdir -p "$OUT"
    exec > >(tee "$OUT/run.log") 2>&1

    stage "unpack"
    tar -xJf .dev/bins.tar.xz -C "$root" || { echo "unpack failed"; exit 1; }
    # The test binaries name the checkout they were built in (their
    # CARGO_MANIFEST_DIR, CARGO_TARGET_TMPDIR, CARGO_BIN_EXE_*).
    local built
    built=$(cat .dev/built-in)
    if [ -n "$built" ] && [ "$built" != "$root" ]; then
        if [ -e "$built" ]; then
            echo "$built exists and is not this checkout: tests that read their sources will fail"
        else
            mkdir -p "$(dirname "$built")" && ln -s "$root" "$built"
        fi
    fi
    mkdir -p "$root/target/tmp"

    stage "machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    grep -m1 "model name" /proc/cpuinfo; nproc
    local nvrtc cublas
    nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so 2>/dev/null || find / -xdev \( -name 'libnvrtc.so' -o -name 'libnvrtc.so.1[23]' \) 2>/dev/null | head -1)
    cublas=$(ls /usr/local/cuda/lib64/libcublas.so 2>/dev/null || find / -xdev \( -name 'libcublas.so' -o -name 'libcublas.so.1[23]' \) 2>/dev/null | head -1)
    echo "nvrtc: $nvrtc"; echo "cublas: $cublas"
    export PATH="/usr/local/cuda/bin:$PATH"
    export LD_LIBRARY_PATH="$(dirname "$nvrtc"):$(dirname "$cublas"):$root/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export MDH_NVRTC_LIB="$nvrtc" MDH_REQUIRE_CUDA_DEVICE=1 RUST_BACKTRACE=1
    ldd target/release/mdh-bench | grep -i "not found"

    tests() { # package-dir test-name timeout [filter...]
        local dir=$1 name=$2 limit=$3 bin
        shift 3
        bin=$(ls -t target/debug/deps/"$name"-* | grep -v '\.d$' | head -1)
        rc=0
        (cd "$dir" && timeout "$limit" "$root/$bin" --test-threads 8 "$@" > "/tmp/test-$name.log" 2>&1) || rc=$?
        echo "rc(test $name)=$rc"
        [ "$rc" -eq 0 ] || failed+=("test $name (status $rc)")
        # One file for all tests: a call brings back at most 8 files.
        { echo "=== $name"; cat "/tmp/test-$name.log"; } >> "$OUT/tests.log"
        grep -E "^test |panicked|test result|skipped" "/tmp/test-$name.log" | grep -v " ok$" | tail -30
    }
    stage "cuda_runtime tests"; tests mdh-gpu cuda_runtime 90
    stage "examples cuda tests"; tests examples/kernels cuda 240
    stage "mdh-tune gpu test"; tests mdh-tune gpu 90 tunes_matvec_on_cuda_where_there_is_a_gpu --nocapture
    if [ "$(left)" -gt 60 ]; then
        stage "launch overhead"
        timeout 40 target/release/examples/launch_overhead --quick 2>&1 | tail -25
    fi
    if [ "$(left)" -gt 180 ]; then
        # The analytical defaults alone (only `*` entries count), as on a
        # GPU nobody tuned for.
        stage "bench with the defaults (MDH_IGNORE_DEVICE_ENTRIES=1)"
        MDH_IGNORE_DEVICE_ENTRIES=1 timeout 150 target/release/mdh-bench --quick \
            --csv "$OUT/bench-defaults.csv" --png /tmp/bench-defaults.png > "$OUT/bench-defaults.log" 2>&1
        echo "rc(bench defaults)=$?"; grep "^|" "$OUT/bench-defaults.log" | grep -E "cuda|cublas"
    fi
    if [ "$(left)" -gt 120 ]; then
        stage "bench as built"
        local limit=$(($(left) - 100))
        rc=0
        timeout $((limit < 200 ? limit : 200)) target/release/mdh-bench --quick \
            --csv "$OUT/bench.csv" --png /tmp/bench.png > "$OUT/bench.log" 2>&1 || rc=$?
        echo "rc(bench)=$rc"
        [ "$rc" -eq 0 ] || failed+=("bench (status $rc)")
        grep "^|" "$OUT/bench.log" | grep -E "cuda|cublas"
    fi
    if [ "$(left)" -gt 60 ]; then
        stage "bench under MDH_AUTOTUNE=1"
        rc=0
        MDH_TUNE_CACHE=/tmp/mdh-cache MDH_AUTOTUNE=1 MDH_AUTOTUNE_BUDGET=${AUTOTUNE_BUDGET:-10} \
            timeout $(($(left) - 15)) target/release/mdh-bench --quick \
            --csv "$OUT/bench-tuned.csv" --png /tmp/bench-tuned.png > "$OUT/bench-tuned.log" 2>&1 || rc=$?
        echo "rc(bench tuned)=$rc"
        [ "$rc" -eq 0 ] || failed+=("bench under MDH_AUTOTUNE=1 (status $rc)")
        grep -E "re-timed|^\|.*(cuda|cublas)" "$OUT/bench-tuned.log"
        tar -czf "$OUT/cache.tgz" -C /tmp mdh-cache 2>/dev/null
    fi
    stage "end"
    if [ ${#failed[@]} -gt 0 ]; then
        printf 'gpu-check.sh: FAILED: %s\n' "${failed[@]}"
        exit 1
    fi
}

case "${1:-}" in
pack) pack ;;
run) run ;;
*) echo "usage: scripts/gpu-check.sh pack | run" >&2; exit 2 ;;
esac
