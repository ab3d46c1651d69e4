"""A 2-D OpenCL kernel with coalesced, strided and wrapped reads, the one the Pöppl–Herz
tests and the model contract price (``OPENCL_SAMPLE``).

Public names: OPENCL_SAMPLE.
"""

OPENCL_SAMPLE = """#define WIDTH 1024
__kernel void sample(__global const float *restrict matrix,
                     __global const float *restrict xxx,
                     __global float *restrict res)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    res[y * WIDTH + x] = matrix[y * WIDTH + x] * xxx[x & 0x7F] + matrix[x * WIDTH + y] / 3.5f;
}
"""
