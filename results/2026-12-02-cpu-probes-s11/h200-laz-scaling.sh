#!/usr/bin/env bash
# Session 11: where the 16-thread LAZ decode loses per-thread speed (frequency or the process?).
b=.gpu/load; shm=/dev/shm/pcv-laz; mkdir -p $shm
echo "== $(nproc) cores; $(lscpu | grep -E 'Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|MHz' | tr -s ' ' | paste -sd';')"
echo "== spin alone"; $b/spin
echo "== spin x16 concurrently"; for i in $(seq 16); do $b/spin & done; wait
echo "== spin x8 concurrently"; for i in $(seq 8); do $b/spin & done; wait
for src in autzen_trim; do
  for n in 1000 100; do [ -f $shm/pcv-load-bench-$src-x$n.laz ] || $b/load_bench --tile $b/$src.las --copies $n --dir $shm --keep --runs 0 >/dev/null 2>&1; rm -f $shm/pcv-load-bench-$src-x$n.las; done
  big=$shm/pcv-load-bench-$src-x1000.laz; small=$shm/pcv-load-bench-$src-x100.laz
  echo "== $src x1000 one process all threads"; PCV_BENCH_ONLY=decode $b/load_bench --runs 2 --laz-decoder pcv --file $big 2>&1 | grep -E '^\| /dev|CPU'
  echo "== $src x100 one process 1 thread alone"; PCV_BENCH_ONLY=decode $b/load_bench --runs 1 --threads 1 --laz-decoder pcv --file $small 2>&1 | grep -E '^\| /dev'
  echo "== $src x100 16 processes x 1 thread"; for i in $(seq 16); do (PCV_BENCH_ONLY=decode $b/load_bench --runs 1 --threads 1 --laz-decoder pcv --file $small 2>&1 | grep -E '^\| /dev') & done; wait
  echo "== $src x100 8 processes x 1 thread"; for i in $(seq 8); do (PCV_BENCH_ONLY=decode $b/load_bench --runs 1 --threads 1 --laz-decoder pcv --file $small 2>&1 | grep -E '^\| /dev') & done; wait
  echo "== $src x1000 one process all threads again"; PCV_BENCH_ONLY=decode $b/load_bench --runs 2 --laz-decoder pcv --file $big 2>&1 | grep -E '^\| /dev'
done
