/* Modified Gram-Schmidt QR (PolyBench), step k on A (m x n, row-major), R (n x n), Q (m x n):
 * gs_norm: R[k][k] = |A[:,k]|, one work-group reducing in local memory;
 * gs_normalize: Q[:,k] = A[:,k] / R[k][k], one work-item per row;
 * gs_update: for each later column j > k, R[k][j] = Q[:,k] . A[:,j] and
 * A[:,j] -= Q[:,k] * R[k][j], one work-item per column. */
#ifndef GROUP
#define GROUP 256
#endif

__kernel void gs_norm(__global const float *A, __global float *R, int k, int m, int n)
{
    __local float part[GROUP];
    int lid = get_local_id(0);
    float sum = 0.0f;
    for (int i = lid; i < m; i += GROUP) {
        float a = A[i * n + k];
        sum += a * a;
    }
    part[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = GROUP / 2; stride > 0; stride >>= 1) {
        if (lid < stride)
            part[lid] += part[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        R[k * n + k] = sqrt(part[0]);
}

__kernel void gs_normalize(__global const float *A, __global const float *R,
                           __global float *Q, int k, int m, int n)
{
    int i = get_global_id(0);
    if (i < m)
        Q[i * n + k] = A[i * n + k] / R[k * n + k];
}

__kernel void gs_update(__global float *A, __global float *R, __global const float *Q,
                        int k, int m, int n)
{
    int j = get_global_id(0) + k + 1;
    if (j < n) {
        float dot = 0.0f;
        for (int i = 0; i < m; i++)
            dot += Q[i * n + k] * A[i * n + j];
        R[k * n + j] = dot;
        for (int i = 0; i < m; i++)
            A[i * n + j] -= Q[i * n + k] * dot;
    }
}
