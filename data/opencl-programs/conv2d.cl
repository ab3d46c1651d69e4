/* 2-D convolution (PolyBench 2DCONV): a 3x3 stencil with fixed weights over the interior of
 * an ni x nj image; the border of B is not written. */
#define W00 0.05f
#define W01 0.10f
#define W02 0.05f
#define W10 0.10f
#define W11 0.40f
#define W12 0.10f
#define W20 0.05f
#define W21 0.10f
#define W22 0.05f

__kernel void conv2d(__global const float *A, __global float *B, int ni, int nj)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i > 0 && i < ni - 1 && j > 0 && j < nj - 1) {
        B[i * nj + j] = W00 * A[(i - 1) * nj + (j - 1)] + W01 * A[(i - 1) * nj + j]
                      + W02 * A[(i - 1) * nj + (j + 1)]
                      + W10 * A[i * nj + (j - 1)] + W11 * A[i * nj + j]
                      + W12 * A[i * nj + (j + 1)]
                      + W20 * A[(i + 1) * nj + (j - 1)] + W21 * A[(i + 1) * nj + j]
                      + W22 * A[(i + 1) * nj + (j + 1)];
    }
}
