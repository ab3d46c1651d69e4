/* FDTD-2D (PolyBench), time step t of a 2-D finite-difference time-domain solver on
 * nx x ny fields ex, ey, hz (row-major), as three launches in this order:
 * fdtd_ey: the source row ey[0][:] = fict[t], then ey[i][j] -= 0.5 (hz[i][j] - hz[i-1][j]);
 * fdtd_ex: ex[i][j] -= 0.5 (hz[i][j] - hz[i][j-1]) for j >= 1;
 * fdtd_hz: hz[i][j] -= 0.7 (ex[i][j+1] - ex[i][j] + ey[i+1][j] - ey[i][j]) inside. */

__kernel void fdtd_ey(__global const float *fict, __global float *ey, __global const float *hz,
                      int t, int nx, int ny)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < nx && j < ny) {
        if (i == 0)
            ey[j] = fict[t];
        else
            ey[i * ny + j] -= 0.5f * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
    }
}

__kernel void fdtd_ex(__global float *ex, __global const float *hz, int nx, int ny)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < nx && j > 0 && j < ny)
        ex[i * ny + j] -= 0.5f * (hz[i * ny + j] - hz[i * ny + j - 1]);
}

__kernel void fdtd_hz(__global const float *ex, __global const float *ey, __global float *hz,
                      int nx, int ny)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < nx - 1 && j < ny - 1)
        hz[i * ny + j] -= 0.7f * (ex[i * ny + j + 1] - ex[i * ny + j]
                                  + ey[(i + 1) * ny + j] - ey[i * ny + j]);
}
