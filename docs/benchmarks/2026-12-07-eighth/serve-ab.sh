#!/bin/bash
out=/tmp/serve-ab.txt; : > $out
port=7400
for round in 1 2; do
  for b in old serve; do
    port=$((port+1))
    cd /tmp/sl
    start=$(date +%s.%N)
    /tmp/dyn-$b serve -w 2 /work/main/programs/tc.dl -F . --listen 127.0.0.1:$port > /tmp/serve-ab-$b.log 2>&1 &
    pid=$!
    for i in $(seq 1 200); do sleep 0.5; if grep -q listening /tmp/serve-ab-$b.log; then break; fi; done
    end=$(date +%s.%N)
    m=$(curl -s 127.0.0.1:$port/metrics | python3 -c "import json,sys; d=json.load(sys.stdin); print('log', d['change_log']['bytes'], 'peak', d['peak_memory_bytes'], 'resident', d['resident_memory_bytes'], 'commit0_ms', d['last_commit_ms'])")
    echo "$b round $round: ready after $(echo "$end - $start" | bc) s; $m" >> $out
    kill $pid; wait $pid 2>/dev/null
  done
done
echo done >> $out
