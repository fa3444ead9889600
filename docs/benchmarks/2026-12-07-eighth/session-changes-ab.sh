#!/bin/bash
# A/B: session over rhodf with 60 rule commits (quiet / shown to /dev/null), and the rand5k load.
out=/tmp/ab-$(date +%H%M).txt
for round in 1 2 3; do
  for b in old new; do
    D=/tmp/dyn-$b
    cd /tmp/rs
    /usr/bin/time -f "$b rules-quiet wall %e s peak %M KB" $D session --quiet -w 2 rhodf.dl -F . < cmds.txt > /tmp/ab-s.txt 2>> $out
    echo "$b rules-quiet $(/tmp/med.sh x < /tmp/ab-s.txt)" >> $out
    /usr/bin/time -f "$b rules-shown wall %e s peak %M KB" $D session --changes /dev/null -w 2 rhodf.dl -F . < cmds.txt > /tmp/ab-s.txt 2>> $out
    echo "$b rules-shown $(/tmp/med.sh x < /tmp/ab-s.txt)" >> $out
    cd /tmp/sl
    echo "" | /usr/bin/time -f "$b load-rand5k wall %e s peak %M KB" $D session --quiet -w 2 /work/main/programs/tc.dl -F . >> $out 2>&1
  done
done
echo done >> $out
