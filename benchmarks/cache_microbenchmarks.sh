#!/usr/bin/env bash
# The cache microbenchmarks behind kernelcast.facts.caches (MEASURED), on the GPU
# machine from the project root: compiled with nvcc, run once to list the launches, then
# under ncu with the L1/L2/DRAM metrics this ncu knows. Writes OUT/launches.txt,
# OUT/metrics.txt and OUT/ncu.csv (data/h100/caches/ and data/h200/caches/ hold the
# H100's and the H200's).
set -euo pipefail
out=${1:?usage: cache_microbenchmarks.sh OUTDIR}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv
nvcc -O3 -arch=sm_90 -o "$out/bench" benchmarks/cache_microbenchmarks.cu
"$out/bench" > "$out/launches.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$ncu" --version
"$ncu" --query-metrics --chip gh100 > "$out/qm.txt" 2>&1
want="l1tex__t_sectors_pipe_lsu_mem_global_op_ld l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss l1tex__t_sectors_pipe_lsu_mem_global_op_st l1tex__t_requests_pipe_lsu_mem_global_op_ld lts__t_sectors_op_read lts__t_sectors_op_write lts__t_sectors_srcunit_tex_op_read lts__t_sectors_srcunit_tex_op_write lts__t_sectors_srcunit_ltcfabric lts__t_sectors_srcunit_ltcfabric_op_read lts__t_sectors_op_read_lookup_hit lts__t_sectors_op_read_lookup_miss lts__t_sectors_srcunit_tex_op_read_lookup_hit lts__t_sectors_srcunit_tex_op_read_lookup_miss lts__t_sectors_op_write_lookup_hit lts__t_sectors_op_write_lookup_miss dram__bytes_read dram__bytes_write dram__sectors_read dram__sectors_write lts__t_sectors lts__t_requests_srcunit_tex_op_read lts__d_sectors_fill_sysmem lts__d_sectors_fill_device launch__shared_mem_config_size launch__grid_size launch__block_size launch__registers_per_thread"
m=""
for w in $want; do
  if grep -qE "^$w( |$)" "$out/qm.txt"; then
    case $w in launch__*) m="$m,$w";; *) m="$m,$w.sum";; esac
  else echo "missing $w"; fi
done
echo "${m#,}" > "$out/metrics.txt"
"$ncu" --csv --metrics "${m#,}" "$out/bench" > "$out/ncu.csv"
rm -f "$out/qm.txt" "$out/bench"
