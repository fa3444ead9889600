#!/bin/bash
# A/B: session over rhodf with 60 rule commits, changes written to /dev/null.
out=/tmp/write-ab.txt; : > $out
for round in 1 2 3; do
  for b in first write2; do
    D=/tmp/dyn-$b
    cd /tmp/rs
    /usr/bin/time -f "$b rules-shown wall %e s peak %M KB" $D session --changes /dev/null -w 2 rhodf.dl -F . < cmds.txt > /tmp/ab-w.txt 2>> $out
    echo "$b rules-shown $(/tmp/med.sh x < /tmp/ab-w.txt)" >> $out
  done
done
echo done >> $out
