#!/bin/bash
# BINS="write2 page fix": eb8d13d, e7330f3, and the commit after e7330f3 (an answer holds
# the commit's declarations and symbols, not its read view).
# tc with 2,001,000 paths in the view; 4 clients each POST 100 single new edges (far
# from the chain: few changes each) as fast as they are answered. Wall time of the 400.
dir=/tmp/big
out=${OUT:-/tmp/conc-ab.txt}; : > $out
for round in 1 2 3; do
  for b in $BINS; do
    /tmp/dyn-$b serve -w 2 /work/main/examples/tc.dl -F $dir --listen 127.0.0.1:7559 > $dir/log4.txt 2>&1 &
    pid=$!
    for i in $(seq 1 50); do sleep 0.2; grep -q listening $dir/log4.txt && break; done
    curl -s -X POST 127.0.0.1:7559/transactions --data-binary 'load edge chain.facts' -o /dev/null
    start=$(date +%s.%N)
    cl=()
    for c in 1 2 3 4; do
      ( for i in $(seq 1 100); do curl -s -X POST 127.0.0.1:7559/transactions --data-binary "+ edge($((100000 + c*1000 + i)), $((200000 + c*1000 + i)))." -o /dev/null; done ) &
      cl+=($!)
    done
    wait "${cl[@]}"
    end=$(date +%s.%N)
    m=$(curl -s 127.0.0.1:7559/metrics | python3 -c "import json,sys; d=json.load(sys.stdin); print('peak', d['peak_memory_bytes'], 'resident', d['resident_memory_bytes'])")
    echo "$b round $round: 400 POSTs by 4 clients in $(echo "$end - $start" | bc) s; $m" >> $out
    kill $pid; wait $pid 2>/dev/null
  done
done
echo done >> $out
