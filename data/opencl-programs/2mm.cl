/* 2mm (PolyBench): D = alpha * A * B * C + beta * D in two launches, row-major:
 * tmp = alpha * A * B (ni x nj, a 2-D launch), then D = tmp * C + beta * D (ni x nl, a 1-D
 * launch over the elements of D). */

__kernel void mm2_tmp(__global const float *A, __global const float *B, __global float *tmp,
                      float alpha, int ni, int nj, int nk)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < ni && j < nj) {
        float sum = 0.0f;
        for (int k = 0; k < nk; ++k)
            sum += alpha * A[i * nk + k] * B[k * nj + j];
        tmp[i * nj + j] = sum;
    }
}

__kernel void mm2_out(__global const float *tmp, __global const float *C, __global float *D,
                      float beta, int ni, int nj, int nl)
{
    int gid = get_global_id(0);
    int i = gid / nl;
    int l = gid % nl;
    if (gid < ni * nl) {
        float sum = beta * D[gid];
        for (int j = 0; j < nj; ++j)
            sum += tmp[i * nj + j] * C[j * nl + l];
        D[gid] = sum;
    }
}
