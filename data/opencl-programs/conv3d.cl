/* 3-D convolution (PolyBench 3DCONV-like): a 3x3x3 stencil with weights from a table over
 * the interior of an ni x nj x nk volume (row-major, k fastest). Each work-item of the 2-D
 * launch owns one (j, k) column and walks i; the border of B is not written. */
__constant float W[27] = {
    0.01f, 0.02f, 0.01f, 0.02f, 0.04f, 0.02f, 0.01f, 0.02f, 0.01f,
    0.02f, 0.04f, 0.02f, 0.04f, 0.28f, 0.04f, 0.02f, 0.04f, 0.02f,
    0.01f, 0.02f, 0.01f, 0.02f, 0.04f, 0.02f, 0.01f, 0.02f, 0.01f
};

__kernel void conv3d(__global const float *A, __global float *B, int ni, int nj, int nk)
{
    int k = get_global_id(0);
    int j = get_global_id(1);
    if (j < 1 || j >= nj - 1 || k < 1 || k >= nk - 1)
        return;
    for (int i = 1; i < ni - 1; i++) {
        float sum = 0.0f;
        for (int di = -1; di <= 1; di++)
            for (int dj = -1; dj <= 1; dj++)
                for (int dk = -1; dk <= 1; dk++)
                    sum += W[(di + 1) * 9 + (dj + 1) * 3 + (dk + 1)]
                         * A[((i + di) * nj + (j + dj)) * nk + (k + dk)];
        B[(i * nj + j) * nk + k] = sum;
    }
}
