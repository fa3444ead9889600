#!/bin/bash
# A/B: one POST that loads a chain of 2,001 nodes into tc (2,001,000 new paths), answered
# whole; the server's peak and resident memory after it (from /metrics), and the client's time.
# serve-answer-ab.txt: binaries write2 (eb8d13d, the answer built as one JSON value) and
# answer (4364f59, streamed); serve-json-ab.txt (OUT=...): answer and json (changes
# written as JSON text directly), the loop's list changed to `answer json`.
dir=/tmp/big; mkdir -p $dir; : > $dir/edge.facts
python3 -c "print('\n'.join(f'{i}\t{i+1}' for i in range(2000)))" > $dir/chain.facts
out=${OUT:-/tmp/serve-answer-ab.txt}; : > $out
for round in 1 2 3; do
  for b in answer json; do
    /tmp/dyn-$b serve -w 2 /work/main/examples/tc.dl -F $dir --listen 127.0.0.1:7555 > $dir/log.txt 2>&1 &
    pid=$!
    for i in $(seq 1 50); do sleep 0.2; grep -q listening $dir/log.txt && break; done
    t=$( { /usr/bin/time -f "%e" curl -s -X POST 127.0.0.1:7555/transactions --data-binary 'load edge chain.facts' -o $dir/answer.json; } 2>&1 )
    m=$(curl -s 127.0.0.1:7555/metrics | python3 -c "import json,sys; d=json.load(sys.stdin); print('peak', d['peak_memory_bytes'], 'resident', d['resident_memory_bytes'])")
    echo "$b round $round: answered after $t s ($(stat -c %s $dir/answer.json) bytes); $m" >> $out
    kill $pid; wait $pid 2>/dev/null
  done
done
echo done >> $out
