/* SYRK (BLAS), lower triangle: C = alpha * A A^T + beta * C for j <= i, with A n x m and
 * C n x n; the upper triangle of C is left as it is. */

__kernel void syrk_lower(__global const float *A, __global float *C, float alpha, float beta,
                         int n, int m)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < n && j <= i) {
        float sum = 0.0f;
        for (int k = 0; k < m; k++)
            sum += A[i * m + k] * A[j * m + k];
        C[i * n + j] = alpha * sum + beta * C[i * n + j];
    }
}
