#!/bin/bash
# A/B: four concurrent /changes pages of 100,000 changes each (after a POST of 2,001,000
# new paths into tc, kept in a 1 GB log), then one alone: the server's peak and resident
# memory (from /metrics) and the page's time. Binaries json2 (ba744b8: a page built as a
# tree of JSON values) and page (written as text).
dir=/tmp/big; mkdir -p $dir; : > $dir/edge.facts
python3 -c "print('\n'.join(f'{i}\t{i+1}' for i in range(2000)))" > $dir/chain.facts
out=${OUT:-/tmp/serve-page-ab.txt}; : > $out
m() { curl -s 127.0.0.1:7557/metrics | python3 -c "import json,sys; d=json.load(sys.stdin); print('peak', d['peak_memory_bytes'], 'resident', d['resident_memory_bytes'])"; }
for round in 1 2 3; do
  for b in json2 page; do
    /tmp/dyn-$b serve -w 2 /work/main/examples/tc.dl -F $dir --listen 127.0.0.1:7557 --log-mb 1024 > $dir/log2.txt 2>&1 &
    pid=$!
    for i in $(seq 1 50); do sleep 0.2; grep -q listening $dir/log2.txt && break; done
    curl -s -X POST 127.0.0.1:7557/transactions --data-binary 'load edge chain.facts' -o /dev/null
    before=$(m)
    pages=()
    for i in 1 2 3 4; do curl -s "127.0.0.1:7557/changes?since=1&limit=100000&offset=$((i*100000))" -o $dir/page-$i.json & pages+=($!); done
    wait "${pages[@]}"
    after=$(m)
    t=$( { /usr/bin/time -f "%e" curl -s "127.0.0.1:7557/changes?since=1&limit=100000" -o $dir/page-$b.json; } 2>&1 )
    echo "$b round $round: after the POST $before; after 4 pages $after; one page $t s ($(stat -c %s $dir/page-$b.json) bytes)" >> $out
    kill $pid; wait $pid 2>/dev/null
  done
done
echo done >> $out
