#!/usr/bin/env bash
# L2 reads of kernels without global loads (benchmarks/fetch_microbenchmarks.cu), on the
# GPU machine from the project root: OUT/launches.txt lists the launches, OUT/ncu.csv their
# counters, OUT/device.txt the GPU, driver, tools and date, OUT/sass.txt the kernels' SASS.
set -euo pipefail
out=${1:?usage: fetch_microbenchmarks.sh OUTDIR}
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2
  ncu --version | tail -1; date -u +%FT%TZ; } > "$out/device.txt"
nvcc -O3 -arch=sm_90 -o "$out/bench" benchmarks/fetch_microbenchmarks.cu
cuobjdump -sass "$out/bench" > "$out/sass.txt"
"$out/bench" > "$out/launches.txt"
ncu --query-metrics --chip gh100 > "$out/qm.txt" 2>&1
want="lts__t_sectors_op_read lts__t_sectors_srcunit_tex_op_read lts__t_sectors_srcunit_ltcfabric lts__t_requests_op_read lts__t_sectors_op_read_lookup_hit lts__t_sectors_op_read_lookup_miss dram__bytes_read lts__t_sectors lts__t_requests_srcunit_tex sm__cycles_elapsed launch__grid_size launch__block_size launch__registers_per_thread"
m=""
for w in $want; do
  if grep -qE "^$w( |$)" "$out/qm.txt"; then
    case $w in launch__*) m="$m,$w";; sm__cycles_elapsed) m="$m,$w.max";; *) m="$m,$w.sum";; esac
  fi
done
echo "${m#,}" > "$out/metrics.txt"
ncu --csv --metrics "${m#,}" "$out/bench" > "$out/ncu.csv"
rm -f "$out/qm.txt" "$out/bench"
