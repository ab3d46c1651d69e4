/* GESUMMV (PolyBench): y = alpha * A x + beta * B x for n x n matrices, one work-item per
 * row. */

__kernel void gesummv(__global const float *A, __global const float *B,
                      __global const float *x, __global float *y,
                      float alpha, float beta, int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float ta = 0.0f, tb = 0.0f;
        for (int j = 0; j < n; j++) {
            ta = fma(A[i * n + j], x[j], ta);
            tb = fma(B[i * n + j], x[j], tb);
        }
        y[i] = alpha * ta + beta * tb;
    }
}
