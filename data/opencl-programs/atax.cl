/* ATAX (PolyBench): y = A^T (A x) for an m x n matrix A, in two launches:
 * tmp = A x (one work-item per row), then y = A^T tmp (one work-item per column). */

__kernel void atax_ax(__global const float *A, __global const float *x, __global float *tmp,
                      int m, int n)
{
    int i = get_global_id(0);
    if (i < m) {
        float sum = 0.0f;
        for (int j = 0; j < n; j++)
            sum += A[i * n + j] * x[j];
        tmp[i] = sum;
    }
}

__kernel void atax_aty(__global const float *A, __global const float *tmp, __global float *y,
                       int m, int n)
{
    int j = get_global_id(0);
    if (j < n) {
        float sum = 0.0f;
        for (int i = 0; i < m; i++)
            sum += A[i * n + j] * tmp[i];
        y[j] = sum;
    }
}
