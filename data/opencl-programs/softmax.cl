/* Softmax of each row of a rows x cols matrix: y = exp(x - max(x)) / sum(exp(x - max(x))).
 * softmax_naive: one work-item per row, three passes over the row. softmax_rows: one
 * work-group per row; its work-items take strided columns and combine their maxima and
 * sums in trees in local memory. */
#ifndef GROUP
#define GROUP 256
#endif

__kernel void softmax_naive(__global const float *x, __global float *y, int rows, int cols)
{
    int r = get_global_id(0);
    if (r < rows) {
        const int base = r * cols;
        float mx = -INFINITY;
        for (int c = 0; c < cols; c++)
            mx = fmax(mx, x[base + c]);
        float sum = 0.0f;
        for (int c = 0; c < cols; c++)
            sum += exp(x[base + c] - mx);
        float inv = 1.0f / sum;
        for (int c = 0; c < cols; c++)
            y[base + c] = exp(x[base + c] - mx) * inv;
    }
}

__kernel void softmax_rows(__global const float *x, __global float *y, int cols)
{
    __local float red[GROUP];
    int lid = get_local_id(0);
    const int base = get_group_id(0) * cols;
    float mx = -INFINITY;
    for (int c = lid; c < cols; c += GROUP)
        mx = fmax(mx, x[base + c]);
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GROUP / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] = fmax(red[lid], red[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (int c = lid; c < cols; c += GROUP)
        sum += native_exp(x[base + c] - mx);
    red[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = GROUP / 2; s > 0; s >>= 1) {
        if (lid < s)
            red[lid] += red[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / red[0];
    for (int c = lid; c < cols; c += GROUP)
        y[base + c] = native_exp(x[base + c] - mx) * inv;
}
