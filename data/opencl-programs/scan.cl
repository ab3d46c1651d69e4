/* Inclusive prefix sum of n floats in two launches. scan_block: each work-group scans its
 * GROUP values in local memory (Hillis-Steele, double-buffered, log2(GROUP) steps) and
 * writes the block's total to sums; scan_add: after the block totals are scanned
 * (offsets), each element of block b > 0 adds offsets[b - 1]. */
#ifndef GROUP
#define GROUP 256
#endif

__kernel void scan_block(__global const float *x, __global float *y, __global float *sums,
                         int n)
{
    __local float buf[2][GROUP];
    int lid = get_local_id(0);
    int gid = get_global_id(0);
    int cur = 0;
    buf[0][lid] = gid < n ? x[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < GROUP; offset *= 2) {
        int next = 1 - cur;
        if (lid >= offset)
            buf[next][lid] = buf[cur][lid] + buf[cur][lid - offset];
        else
            buf[next][lid] = buf[cur][lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        cur = next;
    }
    if (gid < n)
        y[gid] = buf[cur][lid];
    if (lid == GROUP - 1)
        sums[get_group_id(0)] = buf[cur][lid];
}

__kernel void scan_add(__global float *y, __global const float *offsets, int n)
{
    int gid = get_global_id(0);
    int block = get_group_id(0);
    if (gid < n && block > 0)
        y[gid] += offsets[block - 1];
}
