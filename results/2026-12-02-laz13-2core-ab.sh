#!/usr/bin/env bash
# laz13: old (session start, 043eaa9) / new load_bench alternated, decode-only then whole-file load, 2 cores.
echo "== start $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2; do for b in /tmp/laz13-old-load_bench /tmp/laz13-new-load_bench; do for f in autzen_trim-x300 autzen_trim_7-x100; do
  echo "== round $r $b $f decode load $(cut -d' ' -f1 /proc/loadavg)"; PCV_BENCH_RUNS=1 PCV_BENCH_ONLY=decode $b --runs 3 --laz-decoder pcv --file /dev/shm/pcv-load-bench-$f.laz 2>&1 | grep -E '^\| /dev|^decode'
done; done; done
for b in /tmp/laz13-old-load_bench /tmp/laz13-new-load_bench; do f=autzen_trim-x300
  echo "== $b $f whole-file load load $(cut -d' ' -f1 /proc/loadavg)"; PCV_BENCH_RUNS=1 PCV_BENCH_ONLY=load $b --runs 2 --laz-decoder pcv --file /dev/shm/pcv-load-bench-$f.laz 2>&1 | grep -E '^\| /dev|^load'
done
echo "== end $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
