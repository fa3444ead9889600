#!/bin/bash
# End-to-end runs: the binary of 5891794 (old) against HEAD (new), and Soufflé.
cd /tmp/e2e
D=/work/main/target/bench-data/rand-n5000-p0.001-s0
L=/work/main/target/bench-data/lubm-u50-s0/data.nt
for i in 1 2 3; do
  for b in old head; do
    rm -rf out-$b; mkdir -p out-$b
    /usr/bin/time -f "tc-gnp5000 run diff $b: wall %e s, max RSS %M KB" /tmp/dynalog-$b run /work/main/programs/tc.dl -F $D -D out-$b --engine diff -w 2 --stats 2>&1 | grep -E "^load|^evaluation|^output|wall"
  done
  rm -rf out-s; mkdir -p out-s
  /usr/bin/time -f "tc-gnp5000 souffle -j2: wall %e s, max RSS %M KB" souffle -j2 /work/main/programs/tc.dl -F $D -D out-s 2>&1 | grep wall
  cmp out-head/tc.csv out-s/tc.csv && echo "tc.csv identical to Soufflé's"
done
for rules in owl2rl rhodf; do
for i in 1 2 3; do
  for b in old head; do
    for e in seminaive diff; do
      /usr/bin/time -f "lubm50 $rules $e $b: wall %e s, max RSS %M KB" /tmp/dynalog-$b rdf materialize --rules $rules --engine $e -w 2 --all --stats $L -o /tmp/e2e/lubm50-$b.nt 2>&1 | grep -E "^load|^evaluation|^output|wall"
    done
  done
  cmp /tmp/e2e/lubm50-old.nt /tmp/e2e/lubm50-head.nt && echo "same triples"
done
done
