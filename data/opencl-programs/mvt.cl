/* MVT (PolyBench): x1 += A y1 and x2 += A^T y2 for an n x n matrix A, one work-item per
 * element of x1 (walking a row) or of x2 (walking a column); unsigned sizes. */

__kernel void mvt_x1(__global const float *A, __global const float *y1, __global float *x1,
                     unsigned int n)
{
    unsigned int i = get_global_id(0);
    if (i < n) {
        float sum = x1[i];
        for (unsigned int j = 0; j < n; j++)
            sum += A[i * n + j] * y1[j];
        x1[i] = sum;
    }
}

__kernel void mvt_x2(__global const float *A, __global const float *y2, __global float *x2,
                     uint n)
{
    uint i = get_global_id(0);
    if (i < n) {
        float sum = x2[i];
        for (uint j = 0; j < n; j++)
            sum += A[j * n + i] * y2[j];
        x2[i] = sum;
    }
}
