/* Bilinear resize of an in_w x in_h float image to out_w x out_h, pixel centres aligned
 * (the source position of output pixel x is (x + 0.5) in_w / out_w - 0.5), neighbours
 * clamped at the edges. */

__kernel void resize_bilinear(__global const float *src, __global float *dst,
                              int in_w, int in_h, int out_w, int out_h)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x < out_w && y < out_h) {
        float sx = fmax(((float)x + 0.5f) * ((float)in_w / (float)out_w) - 0.5f, 0.0f);
        float sy = fmax(((float)y + 0.5f) * ((float)in_h / (float)out_h) - 0.5f, 0.0f);
        int x0 = min(convert_int(floor(sx)), in_w - 1);
        int y0 = min(convert_int(floor(sy)), in_h - 1);
        int x1 = min(x0 + 1, in_w - 1);
        int y1 = min(y0 + 1, in_h - 1);
        float fx = sx - (float)x0;
        float fy = sy - (float)y0;
        float top = src[y0 * in_w + x0] * (1.0f - fx) + src[y0 * in_w + x1] * fx;
        float bottom = src[y1 * in_w + x0] * (1.0f - fx) + src[y1 * in_w + x1] * fx;
        dst[y * out_w + x] = top * (1.0f - fy) + bottom * fy;
    }
}
