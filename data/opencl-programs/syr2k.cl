/* SYR2K (PolyBench), double precision: C = alpha * A B^T + alpha * B A^T + beta * C, with
 * A and B n x m and C n x n. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

typedef double real_t;

__kernel void syr2k(__global const real_t *A, __global const real_t *B, __global real_t *C,
                    real_t alpha, real_t beta, int n, int m)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < n && j < n) {
        real_t sum = beta * C[i * n + j];
        for (int k = 0; k < m; k++)
            sum += alpha * A[i * m + k] * B[j * m + k] + alpha * B[i * m + k] * A[j * m + k];
        C[i * n + j] = sum;
    }
}
