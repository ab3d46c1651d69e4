/* BiCG sub-kernel (PolyBench), double precision: q = A p and s = A^T r for an nx x ny
 * matrix A. bicg_q gives each row a work-group of GROUP work-items that sum strided
 * columns and then add their sums in a tree in local memory; bicg_s gives each column one
 * work-item. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifndef GROUP
#define GROUP 256
#endif

__kernel void bicg_q(__global const double *A, __global const double *p, __global double *q,
                     int nx, int ny)
{
    __local double part[GROUP];
    int row = get_group_id(0);
    int lid = get_local_id(0);
    double sum = 0.0;
    for (int j = lid; j < ny; j += GROUP)
        sum += A[row * ny + j] * p[j];
    part[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GROUP / 2; s > 0; s /= 2) {
        if (lid < s)
            part[lid] += part[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0 && row < nx)
        q[row] = part[0];
}

__kernel void bicg_s(__global const double *A, __global const double *r, __global double *s,
                     int nx, int ny)
{
    int j = get_global_id(0);
    if (j < ny) {
        double sum = 0.0;
        for (int i = 0; i < nx; i++)
            sum += r[i] * A[i * ny + j];
        s[j] = sum;
    }
}
