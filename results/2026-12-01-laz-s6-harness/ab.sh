#!/bin/bash
A=$1; B=$2; F=$3; C=$4; N=$5
for i in $(seq $N); do
  echo "A $(nice -n -15 $A $F $C pcv 3 | awk '{print $7}')"
  echo "B $(nice -n -15 $B $F $C pcv 3 | awk '{print $7}')"
done > /tmp/laz6-ab.out
for k in A B; do grep "^$k " /tmp/laz6-ab.out | awk '{print $2}' | sort -n | awk -v k=$k '{a[NR]=$1} END {printf "%s min %.3f med %.3f (n=%d)\n", k, a[1], a[int((NR+1)/2)], NR}'; done
