#!/usr/bin/env bash
# Prints the build figures of issue 24's acceptance, to be measured on a
# quiet machine (other builds running at the same time inflate every wall
# time): the README's first command from a cold target dir; a one-kernel
# crate (matmul, no config, outside the workspace, as a user writes it): its
# first release build including dependencies and its rebuild after touching
# its source; matmul 512³ in that crate's release build, its default debug
# build (with the count of the debug-build note it logs, which must be 1) and
# its debug build with each candidate profile setting (the note once where
# the kernel's crate has debug assertions, else never: it exits with a
# failure otherwise).
#
# usage: scripts/build-times.sh [--no-readme] [--test-command] [WORKDIR]
# (default: a new temporary folder; the registry should be downloaded
# already: `cargo fetch` is not timed; --no-readme skips the README
# command's cold build; --test-command also times the README's test
# command, scripts/test-all.sh, from a cold target dir: 15-40 minutes)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
readme=1
test_command=0
while [ $# -gt 0 ]; do
    case "$1" in
    --no-readme) readme=0 ;;
    --test-command) test_command=1 ;;
    *) break ;;
    esac
    shift
done
work=${1:-$(mktemp -d)}
mkdir -p "$work"
echo "build-times: work folder $work, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# Runs "$@" with its output in $work/log, sets $secs to its wall time.
timed() {
    local t0
    t0=$(date +%s.%N)
    if ! "$@" >"$work/log" 2>&1; then
        cat "$work/log" >&2
        exit 1
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

cd "$root"
cargo fetch -q
if [ $readme = 1 ]; then
    timed env CARGO_TARGET_DIR="$work/readme-target" cargo build --release -p mdh-examples --bin matvec
    echo "README first command (cargo build --release -p mdh-examples --bin matvec, cold target dir): ${secs} s"
fi
if [ $test_command = 1 ]; then
    timed env CARGO_TARGET_DIR="$work/test-target" scripts/test-all.sh
    echo "README test command (scripts/test-all.sh, cold target dir, packages installed): ${secs} s"
fi

crate="$work/onekernel"
mkdir -p "$crate/src"
cat >"$crate/Cargo.toml" <<TOML
[package]
name = "onekernel"
version = "0.1.0"
edition = "2021"

[dependencies]
mdh = { path = "$root/mdh" }
log = "0.4"

[workspace]
TOML
cp "$root/examples/kernels/src/matmul.rs" "$crate/src/matmul.rs"
cat >"$crate/src/main.rs" <<'RS'
//! matmul 512³ (no config): the median of 5 calls after one warm-up, and
//! the warnings logged (the debug-build note) on stderr.
use std::time::Instant;

// The example kernel (copied beside this file; the crate has no configs/,
// so the macro uses the default plan).
include!("matmul.rs");

struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        eprintln!("{}: {}", record.level(), record.args());
    }
    fn flush(&self) {}
}

fn main() -> Result<(), mdh::Error> {
    log::set_logger(&Stderr).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    let n = 512;
    let (a, b) = (vec![1.0f32; n * n], vec![0.5f32; n * n]);
    let mut c = vec![0.0f32; n * n];
    let sizes = matmul::Sizes { I: n, J: n, K: n };
    matmul::cpu(&a, &b, &mut c, sizes)?;
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            matmul::cpu(&a, &b, &mut c, sizes).map(|()| t.elapsed().as_secs_f64() * 1e3)
        })
        .collect::<Result<_, _>>()?;
    times.sort_by(f64::total_cmp);
    assert!(c.iter().all(|&x| x == 256.0));
    println!("{:.2}", times[2]);
    Ok(())
}
RS
cd "$crate"
timed cargo build --release
echo "one-kernel crate, first release build with dependencies: ${secs} s"
touch src/main.rs
timed cargo build --release
echo "one-kernel crate, release rebuild after touching src/main.rs: ${secs} s"
release=$(cargo run -q --release 2>/dev/null)
echo "matmul 512^3, release build: ${release} ms"

# A debug build of the crate with profile setting "$1" (empty: the default)
# described by "$2", which must log the debug-build note "$3" times;
# prints its build time, matmul's time, the ratio to release, the notes.
wrong_notes=()
debug() {
    cp Cargo.toml Cargo.toml.orig
    printf '%b' "$1" >>Cargo.toml
    timed cargo build
    local build=$secs ms notes
    ms=$(cargo run -q 2>"$work/stderr")
    notes=$(grep -c "compiled with debug assertions" "$work/stderr" || true)
    mv Cargo.toml.orig Cargo.toml
    echo "matmul 512^3, debug build ${2}: ${ms} ms ($(awk -v a="$ms" -v b="$release" 'BEGIN { printf "%.1f", a / b }')x release; build ${build} s; debug-build notes logged: ${notes})"
    [ "$notes" -eq "$3" ] || wrong_notes+=("debug build $2: $notes debug-build notes, expected $3")
}
debug "" "(default dev profile)" 1
debug '\n[profile.dev]\nopt-level = 1\n' "with [profile.dev] opt-level = 1" 1
debug '\n[profile.dev.package."*"]\nopt-level = 3\n' "with [profile.dev.package.\"*\"] opt-level = 3" 1
debug '\n[profile.dev.package."*"]\nopt-level = 3\n[profile.dev.package.onekernel]\nopt-level = 3\n' "with opt-level = 3 for \"*\" and the kernel's crate" 1
# The README's recommendation (and the note's hint): no debug assertions
# in the kernel's crate, so no note.
debug '\n[profile.dev.package."*"]\nopt-level = 3\n[profile.dev.package.onekernel]\nopt-level = 3\ndebug-assertions = false\n' "with the README's setting (opt-level = 3 for \"*\", the kernel's crate also debug-assertions = false)" 0
if [ ${#wrong_notes[@]} -gt 0 ]; then
    printf 'build-times.sh: FAILED: %s\n' "${wrong_notes[@]}" >&2
    exit 1
fi
