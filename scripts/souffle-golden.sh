#!/usr/bin/env bash
# Regenerate the expected outputs of the Soufflé golden suite (tests/souffle/*/expected)
# with Soufflé itself. Needs `souffle` on PATH (../shared/peers/souffle/install.sh, as
# root); the tests only read the files this writes, so they run without Soufflé.
#
#   scripts/souffle-golden.sh            every case
#   scripts/souffle-golden.sh disjunction pragma
set -euo pipefail
cd "$(dirname "$0")/../tests/souffle"
command -v souffle >/dev/null || { echo "souffle is not on PATH" >&2; exit 1; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(*/)
for case in "${cases[@]}"; do
    case=${case%/}
    [ -f "$case/program.dl" ] || { echo "$case: no program.dl" >&2; exit 1; }
    rm -rf "$case/expected"
    mkdir -p "$case/expected"
    facts="$case/facts"
    [ -d "$facts" ] || facts="$case"
    souffle -j1 -F "$facts" -D "$case/expected" "$case/program.dl" 2> "$case/expected.stderr" || {
        cat "$case/expected.stderr" >&2; exit 1; }
    # Soufflé's warnings are not part of the expected outputs.
    rm -f "$case/expected.stderr"
    echo "$case: $(ls "$case/expected" | tr '\n' ' ')"
done
