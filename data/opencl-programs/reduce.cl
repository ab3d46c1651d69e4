/* Sum of n values in two launches. reduce_partial: each work-item adds a grid-strided slice
 * of x, then each work-group adds its work-items' sums in a tree in local memory and
 * writes one partial sum per group; reduce_final: one work-group adds the partial sums the
 * same way. Compile with -D USE_DOUBLE=1 for double precision, -D GROUP=<local size>. */
#if USE_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#else
typedef float real;
#endif

#ifndef GROUP
#define GROUP 256
#endif

__kernel void reduce_partial(__global const real *x, __global real *partial, int n)
{
    __local real scratch[GROUP];
    int lid = get_local_id(0);
    real acc = 0;
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        acc += x[i];
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    int s = GROUP / 2;
    while (s > 0) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
        s >>= 1;
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}

__kernel void reduce_final(__global const real *partial, __global real *result, int count)
{
    __local real scratch[GROUP];
    int lid = get_local_id(0);
    real acc = 0;
    int i = lid;
    while (i < count) {
        acc += partial[i];
        i += GROUP;
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GROUP / 2; s > 0; s >>= 1) {
        if (lid < s)
            scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        result[0] = scratch[0];
}
