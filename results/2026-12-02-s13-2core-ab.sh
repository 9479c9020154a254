#!/usr/bin/env bash
# Session 13 lead: old (043eaa9, main at the session's start) / new (laz13 + LAZ placement + cpu13) alternated on the 2-core VM, quiet.
echo "== LAZ 2 cores: $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2; do for b in /tmp/s13-old-lb /tmp/s13-new-lb; do for f in autzen_trim-x300 autzen_trim_7-x100; do
  echo "== round $r $b $f decode"; PCV_BENCH_ONLY=decode $b --runs 3 --laz-decoder pcv --file /dev/shm/pcv-load-bench-$f.laz 2>&1 | grep -E '^\| /dev'
  echo "== round $r $b $f load"; PCV_BENCH_ONLY=load $b --runs 3 --laz-decoder pcv --file /dev/shm/pcv-load-bench-$f.laz 2>&1 | grep -E '^\| /dev'
done; done; done
echo "== CPU backend: $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2 3; do for b in /tmp/s13-old-cfb /tmp/s13-new-cfb; do
  echo "== round $r $b"; $b --modes culled,quant --poses start,close-up,far,top,grazing,inside --frames 10 2>&1 | grep -v '^load average at the end'
done; done
echo "== end $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
