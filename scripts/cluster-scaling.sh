#!/bin/sh
# RhoDF on LUBM(N): full evaluation (E) and 1% updates, one process against two
# processes on loopback (docs/cluster.md). Usage: scripts/cluster-scaling.sh [N] [DIR]
# Needs a release build (cargo build --release) and /usr/bin/time.
set -eu
N=${1:-10}
DIR=${2:-target/cluster-scaling}
B=$(pwd)/target/release/dynalog
mkdir -p "$DIR"
cd "$DIR"
[ -f lubm.nt ] || "$B" gen lubm --universities "$N" --seed 0 -o lubm.nt
LINES=$(wc -l < lubm.nt)
KEEP=$((LINES * 99 / 100))
head -n "$KEEP" lubm.nt > base.nt
tail -n +"$((KEEP + 1))" lubm.nt > upd.nt
sed 's/.input T(IO="rdf", mapping="triples")/.input T(IO="rdf", filename="base.nt", mapping="triples")\n.printsize T/' \
    "$OLDPWD/programs/rhodf.dl" > rhodf.dl
printf '127.0.0.1:24301\n127.0.0.1:24302\n' > hosts
UPDATES=$(for i in 1 2 3; do printf 'load T upd.nt\ncommit\nunload T upd.nt\ncommit\n'; done)
for i in 1 2 3; do
    echo "== run: 1 process x 1 worker"
    /usr/bin/time -f "wall %e s, peak RSS %M KB" "$B" run rhodf.dl -F . -D out1 --engine diff -w 1 --stats 2>&1 | grep -E "evaluation|wall"
    echo "== run: 1 process x 2 workers"
    /usr/bin/time -f "wall %e s, peak RSS %M KB" "$B" run rhodf.dl -F . -D out2 --engine diff -w 2 --stats 2>&1 | grep -E "evaluation|wall"
    echo "== run: 2 processes x 1 worker (process 1, then process 0)"
    /usr/bin/time -f "wall %e s, peak RSS %M KB" "$B" run rhodf.dl -F . -D outp1 --engine diff -w 1 -n 2 -p 1 -H hosts --stats 2>&1 | grep -E "evaluation|wall|network" &
    /usr/bin/time -f "wall %e s, peak RSS %M KB" "$B" run rhodf.dl -F . -D outp0 --engine diff -w 1 -n 2 -p 0 -H hosts --stats 2>&1 | grep -E "evaluation|wall|network"
    wait
done
echo "== session: 1 process x 1 worker"
echo "$UPDATES" | "$B" session rhodf.dl -F . -w 1 --quiet
echo "== session: 1 process x 2 workers"
echo "$UPDATES" | "$B" session rhodf.dl -F . -w 2 --quiet
echo "== session: 2 processes x 1 worker"
"$B" session rhodf.dl -w 1 -n 2 -p 1 -H hosts 2>/dev/null &
echo "$UPDATES" | "$B" session rhodf.dl -F . -w 1 -n 2 -p 0 -H hosts --quiet 2>/dev/null
wait
