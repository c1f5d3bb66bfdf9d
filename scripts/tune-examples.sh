#!/usr/bin/env bash
# Tunes the CPU plan of every example with mdh-tune (release build): each
# binary of examples/src/bin/ times one kernel of examples/kernels/src/ at the
# sizes below (those it uses without --quick); the tuned entries are merged
# into configs/<kernel>.yaml (other entries are kept).
#
#   scripts/tune-examples.sh [BUDGET] [--skip-tuned] [--out DIR] [NAME...]
#
#   BUDGET        tuning time per kernel (default 60s; e.g. 45s, 2m)
#   --skip-tuned  skip kernels whose config already has a CPU entry for this
#                 CPU (or `*`) at those sizes
#   --out DIR     where the configs are (default: configs)
#   NAME...       only these examples (default: all of examples/src/bin/)
#
# A kernel whose best plan is the one that already runs (the configured or
# the default plan) gets no entry; the summary at the end says so.
set -euo pipefail
cd "$(dirname "$0")/.."

# The sizes each binary times without --quick (read from its main).
declare -A SIZES=(
    [bmatmul]="NB=16,I=10,J=500,K=64"
    [ccsdt]="NA=16,NB=16,NC=16,ND=16,NE=16,NF=16,NG=16"
    [conv2d]="P=4096,Q=4096,R=5,S=5"
    [dot]="N=16777216"
    [genhisto]="E=1048576,B=256"
    [histo]="E=1048576,B=256"
    [jacobi1d]="N=16777216"
    [jacobi2d]="N=4096,M=4096"
    [jacobi3d]="N=256,M=256,L=256"
    [mandelbrot]="H=2048,W=2048"
    [map]="N=16777216"
    [matmul]="I=1024,J=1024,K=1024"
    [matmul_t]="I=1024,J=1024,K=1024"
    [matvec]="I=4096,K=4096"
    [mbbs]="I=4096,J=4096"
    [mcc]="N=1,P=112,Q=112,K=64,R=7,S=7,C=3"
    [mcc_capsule]="N=1,P=32,Q=32,K=16,MI=4,MJ=4,R=3,S=3,C=8,MK=4"
    [prl]="I=32768,J=32768"
    [reduce]="N=16777216"
    [reduce2]="N=16777216"
    [scan]="N=16777216"
)

budget=60s
out=configs
skip=()
names=()
while [ $# -gt 0 ]; do
    case "$1" in
        --skip-tuned) skip=(--skip-tuned); shift ;;
        --out) out=$2; shift 2 ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "tune-examples.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        [0-9]*) budget=$1; shift ;;
        *) names+=("$1"); shift ;;
    esac
done
if [ ${#names[@]} -eq 0 ]; then
    for f in examples/src/bin/*.rs; do
        names+=("$(basename "$f" .rs)")
    done
fi
for name in "${names[@]}"; do
    if [ -z "${SIZES[$name]:-}" ]; then
        echo "tune-examples.sh: no sizes for \`$name\`; add the sizes its binary times to SIZES" >&2
        exit 2
    fi
done

cargo build --release -p mdh-tune
tuner="${CARGO_TARGET_DIR:-target}/release/mdh-tune"

results=()
n=${#names[@]}
i=0
for name in "${names[@]}"; do
    i=$((i + 1))
    sizes=${SIZES[$name]}
    echo "== [$i/$n] $name at $sizes, budget $budget ($(date +%H:%M:%S))"
    stdout=$(mktemp)
    began=$(date +%s)
    if "$tuner" --manifest-path examples/kernels/Cargo.toml --kernel "$name" --backend cpu \
        --size "$sizes" --budget "$budget" --out "$out" "${skip[@]}" | tee "$stdout"; then
        speedup=$(sed -n 's/^speedup over default: //p' "$stdout")
        if grep -q 'skipped (--skip-tuned)' "$stdout"; then
            result="skipped: already tuned"
        elif grep -q 'beyond the noise: config unchanged' "$stdout"; then
            result="unchanged (re-timed in turns, the best plan found does not beat the plan that runs now beyond the noise), speedup over default $speedup"
        elif grep -q 'config unchanged' "$stdout"; then
            result="unchanged (the plan that runs now is the best found), speedup over default $speedup"
        else
            result="written, speedup over default $speedup"
        fi
    else
        result="FAILED (see above)"
    fi
    rm -f "$stdout"
    result="$result [$(($(date +%s) - began)) s]"
    echo "== $name: $result"
    results+=("$name: $result")
done

echo
echo "summary (configs in $out/):"
printf '  %s\n' "${results[@]}"
