#!/bin/bash
# Session 14's old/new LAZ A/B on 2 cores: main 11c309d's load_bench (old) and the laz14 merge's (new),
# alternated, 2 rounds, decode and whole load, best / median of 3 runs, CPU seconds.
old=/tmp/load_bench_old_main; new=/tmp/load_bench_new
files="/dev/shm/pcv-load-bench-autzen_trim-x300.laz /dev/shm/pcv-load-bench-autzen_trim_7-x100.laz /dev/shm/pcv-load-bench-20000000-f3.laz"
for round in 1 2; do
  for f in $files; do
    for col in decode load; do
      for v in old new; do
        bin=$old; [ $v = new ] && bin=$new
        r=$(PCV_BENCH_ONLY=$col $bin --runs 3 --laz-decoder pcv --file $f 2>&1 | grep '^| /dev' | awk -F'|' -v c=$col '{gsub(/ /,""); if (c=="decode") print "best " $5 " median " $6 " cpu_s " $7; else print "best " $10 " median " $11 " cpu_s " $12}')
        echo "round $round $(basename $f .laz) $col $v: $r (load $(cut -d' ' -f1 /proc/loadavg))"
      done
    done
  done
done
