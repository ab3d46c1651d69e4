#!/usr/bin/env bash
# Measure suites on the NVIDIA GPU of this machine through both backends, into
# OUTDIR/opencl.sqlite and OUTDIR/cuda.sqlite (resuming whatever they hold): each suite
# twice, with p chosen as in §4.2 and with the largest p the suite allows.
# Usage: benchmarks/gpu_campaign.sh OUTDIR SUITE...   (suites: measurement test validation)
set -u
out=$1; shift
mkdir -p "$out"
for backend in opencl cuda; do
  for suite in "$@"; do
    for p in "" max; do
      start=$(date +%s%N)
      python3 -m kernelcast measure --device NVIDIA --backend "$backend" --suite "$suite" \
          ${p:+--p $p} --db "$out/$backend.sqlite" 2>>"$out/campaign.log" | tail -1
      echo "$backend $suite p=${p:-4.2}: $(( ($(date +%s%N) - start) / 1000000 )) ms wall"
    done
  done
done
