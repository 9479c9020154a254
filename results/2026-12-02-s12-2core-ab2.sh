#!/usr/bin/env bash
# Session 12 lead, end of session: old (6c5d0f2) / final (0aaf015 and after) alternated on the 2-core VM.
echo "== LAZ 2 cores: $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2; do for b in /tmp/main-6c5d0f2-load_bench /tmp/s12-final-lb; do for f in autzen_trim-x300 autzen_trim_7-x100; do
  echo "== round $r $b $f"; PCV_BENCH_ONLY=decode $b --runs 3 --laz-decoder pcv --file /dev/shm/pcv-load-bench-$f.laz 2>&1 | grep -E '^\| /dev'
done; done; done
echo "== CPU backend: $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in 1 2; do for b in /tmp/main-6c5d0f2-cpu_frame_bench /tmp/s12-final-cfb; do
  echo "== round $r $b"; $b --modes culled,quant --poses start,close-up,far,top,grazing,inside --frames 10 2>&1 | grep -v '^load average at the end'
done; done
echo "== end $(date -u +%H:%M) load $(cut -d' ' -f1-3 /proc/loadavg)"
