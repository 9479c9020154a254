#!/bin/bash
# One pass: pcv decode and load (best of 3 each) of every LAZ file, 2 cores, page cache.
cd /work/main
for F in /dev/shm/filing/pcv-load-bench-20000000.laz /dev/shm/pcv-load-bench-20000000-f2-rgb8.laz /dev/shm/pcv-load-bench-20000000-f3-rgb8.laz /dev/shm/pcv-load-bench-20000000-f2.laz /dev/shm/pcv-load-bench-20000000-f3.laz /dev/shm/pcv-load-bench-autzen_trim-x300.laz /dev/shm/pcv-load-bench-autzen_trim_7-x100.laz; do
  d=$(PCV_BENCH_ONLY=decode target/release/examples/load_bench --runs 3 --laz-decoder pcv --file $F 2>&1 | tail -1 | awk -F'|' '{print $5 "/" $7}')
  l=$(PCV_BENCH_ONLY=load target/release/examples/load_bench --runs 3 --laz-decoder pcv --file $F 2>&1 | tail -1 | awk -F'|' '{print $10 "/" $12}')
  echo "$(date -u +%H:%M:%S) load1 $(cut -d' ' -f1 /proc/loadavg) $(basename $(dirname $F))/$(basename $F): decode best M/s / CPU s$d; load$l"
done
