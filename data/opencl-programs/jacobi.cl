/* Jacobi smoothing (PolyBench jacobi-1d / jacobi-2d), one sweep from A into B: the mean of
 * each interior point and its neighbours (3 in 1-D, 5 in 2-D); the border of B is not
 * written. */

__kernel void jacobi1d(__global const float *A, __global float *B, int n)
{
    size_t i = get_global_id(0);
    if (i >= 1 && i < (size_t)(n - 1))
        B[i] = 0.33333f * (A[i - 1] + A[i] + A[i + 1]);
}

__kernel void jacobi2d(__global const float *A, __global float *B, int n, int m)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i >= 1 && i < n - 1 && j >= 1 && j < m - 1)
        B[i * m + j] = 0.2f * (A[i * m + j] + A[i * m + j - 1] + A[i * m + j + 1]
                               + A[(i + 1) * m + j] + A[(i - 1) * m + j]);
}
