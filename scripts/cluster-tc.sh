#!/bin/sh
# Transitive closure on G(5000, 0.001) (tc-gnp5000, 24.7M facts): full evaluation on one
# process against two processes on loopback, with each process's peak memory
# (docs/cluster.md). Usage: scripts/cluster-tc.sh [REPEAT] [DIR]
# Needs a release build (cargo build --release) and /usr/bin/time.
set -eu
R=${1:-3}
DIR=${2:-target/cluster-tc}
B=$(pwd)/target/release/dynalog
P=$(pwd)/programs/tc.dl
mkdir -p "$DIR"
cd "$DIR"
[ -f edge.facts ] || "$B" gen rand -n 5000 -p 0.001 -s 0 -o edge.facts
printf '127.0.0.1:24311\n127.0.0.1:24312\n' > hosts
T='wall %e s, peak RSS %M KB'
for i in $(seq 1 "$R"); do
    echo "== 1 process x 1 worker"
    /usr/bin/time -f "$T" "$B" run "$P" -F . -D out1 --engine diff -w 1 --stats 2>&1 | grep -E "^evaluation|wall"
    echo "== 1 process x 2 workers"
    /usr/bin/time -f "$T" "$B" run "$P" -F . -D out2 --engine diff -w 2 --stats 2>&1 | grep -E "^evaluation|wall"
    echo "== 2 processes x 1 worker: process 1, then process 0"
    /usr/bin/time -f "$T" "$B" run "$P" -F . -D outp1 --engine diff -w 1 -n 2 -p 1 -H hosts --stats 2>&1 | grep -E "^evaluation|wall|network" | sed 's/^/p1: /' &
    /usr/bin/time -f "$T" "$B" run "$P" -F . -D outp0 --engine diff -w 1 -n 2 -p 0 -H hosts --stats 2>&1 | grep -E "^evaluation|wall|network" | sed 's/^/p0: /'
    wait
    cmp -s out2/tc.csv outp0/tc.csv && cmp -s out1/tc.csv out2/tc.csv && echo "outputs identical"
done
