/* Matrix transpose, dst (width x height) = src (height x width)^T. transpose_naive: one
 * work-item per element, reads coalesced, writes strided; transpose_tiled: TILE x TILE
 * work-groups go through a padded tile in local memory so that both are coalesced. */
#ifndef TILE
#define TILE 16
#endif

__kernel void transpose_naive(__global const float *src, __global float *dst, int width,
                              int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x < width && y < height)
        dst[x * height + y] = src[y * width + x];
}

__kernel void transpose_tiled(__global const float *src, __global float *dst, int width,
                              int height)
{
    __local float tile[TILE][TILE + 1];
    int tx = get_local_id(0);
    int ty = get_local_id(1);
    int bx = get_group_id(0) * TILE;
    int by = get_group_id(1) * TILE;
    int x = bx + tx;
    int y = by + ty;
    if (x < width && y < height)
        tile[ty][tx] = src[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    x = by + tx;
    y = bx + ty;
    if (x < height && y < width)
        dst[y * height + x] = tile[tx][ty];
}
