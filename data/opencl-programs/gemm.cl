/* GEMM: C = alpha * A * B + beta * C, with A ni x nk, B nk x nj and C ni x nj, row-major.
 * gemm: one work-item per element of C. gemm_tiled: TILE x TILE work-groups that stage
 * tiles of A and B in local memory; edge tiles are padded with zeros. */
#ifndef TILE
#define TILE 16
#endif

__kernel void gemm(__global const float *A, __global const float *B, __global float *C,
                   float alpha, float beta, int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        float acc = 0.0f;
        for (int k = 0; k < nk; k++)
            acc += A[i * nk + k] * B[k * nj + j];
        C[i * nj + j] = alpha * acc + beta * C[i * nj + j];
    }
}

__kernel void gemm_tiled(__global const float *A, __global const float *B, __global float *C,
                         float alpha, float beta, int ni, int nj, int nk)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    int tx = get_local_id(0);
    int ty = get_local_id(1);
    int j = get_group_id(0) * TILE + tx;
    int i = get_group_id(1) * TILE + ty;
    int tiles = (nk + TILE - 1) / TILE;
    float acc = 0.0f;
    for (int t = 0; t < tiles; t++) {
        int ka = t * TILE + tx;
        int kb = t * TILE + ty;
        As[ty][tx] = (i < ni && ka < nk) ? A[i * nk + ka] : 0.0f;
        Bs[ty][tx] = (kb < nk && j < nj) ? B[kb * nj + j] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++)
            acc = mad(As[ty][k], Bs[k][tx], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < ni && j < nj)
        C[i * nj + j] = alpha * acc + beta * C[i * nj + j];
}
