#!/usr/bin/env bash
# Expands every kernel of the repository with this checkout's mdh-core and
# writes the expansions to OUT_DIR (one file per kernel and config), so that
# two checkouts can be compared: a change that must not alter generated code
# (a refactor of the compiler) shows an empty `diff -r`:
#
#   scripts/expansion-snapshot.sh /tmp/before      # on the base checkout
#   scripts/expansion-snapshot.sh /tmp/after       # on the changed one
#   diff -r /tmp/before /tmp/after
#
# Builds only mdh-core (no example crates); see
# mdh-core/examples/expansion_snapshot.rs for what is expanded.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 2
fi
out=$(realpath -m "$1")
cd "$(dirname "$0")/.."
rm -rf "$out"
cargo run -q -p mdh-core --example expansion_snapshot -- "$out"
