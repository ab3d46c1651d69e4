/* Image filters on width x height images (row-major), one work-item per pixel.
 * box_blur: 8-bit mean over a (2 RADIUS + 1)^2 window, edges clamped, rounded to nearest;
 * gaussian5x5: 5x5 binomial blur of a float image, border pixels copied;
 * sobel: gradient magnitude of an 8-bit image, 0 on the border. */
#ifndef RADIUS
#define RADIUS 1
#endif
#define WINDOW (2 * RADIUS + 1)

__constant float GAUSS[25] = {
    1.0f,  4.0f,  6.0f,  4.0f, 1.0f,
    4.0f, 16.0f, 24.0f, 16.0f, 4.0f,
    6.0f, 24.0f, 36.0f, 24.0f, 6.0f,
    4.0f, 16.0f, 24.0f, 16.0f, 4.0f,
    1.0f,  4.0f,  6.0f,  4.0f, 1.0f
};

__kernel void box_blur(__global const uchar *src, __global uchar *dst, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    uint sum = 0;
    for (int dy = -RADIUS; dy <= RADIUS; dy++) {
        int yy = clamp(y + dy, 0, height - 1);
        for (int dx = -RADIUS; dx <= RADIUS; dx++) {
            int xx = min(max(x + dx, 0), width - 1);
            sum += src[yy * width + xx];
        }
    }
    dst[y * width + x] = convert_uchar_sat(convert_float(sum) / (WINDOW * WINDOW) + 0.5f);
}

__kernel void gaussian5x5(__global const float *src, __global float *dst, int width,
                          int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x < width && y < height) {
        if (x >= 2 && x < width - 2 && y >= 2 && y < height - 2) {
            float sum = 0.0f;
            for (int dy = -2; dy <= 2; dy++)
                for (int dx = -2; dx <= 2; dx++)
                    sum += GAUSS[(dy + 2) * 5 + (dx + 2)] * src[(y + dy) * width + (x + dx)];
            dst[y * width + x] = sum * (1.0f / 256.0f);
        } else {
            dst[y * width + x] = src[y * width + x];
        }
    }
}

__kernel void sobel(__global const uchar *img, __global float *mag, int width, int height)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
        mag[y * width + x] = 0.0f;
        return;
    }
    float p00 = convert_float(img[(y - 1) * width + (x - 1)]);
    float p01 = convert_float(img[(y - 1) * width + x]);
    float p02 = convert_float(img[(y - 1) * width + (x + 1)]);
    float p10 = convert_float(img[y * width + (x - 1)]);
    float p12 = convert_float(img[y * width + (x + 1)]);
    float p20 = convert_float(img[(y + 1) * width + (x - 1)]);
    float p21 = convert_float(img[(y + 1) * width + x]);
    float p22 = convert_float(img[(y + 1) * width + (x + 1)]);
    float gx = (p02 + 2.0f * p12 + p22) - (p00 + 2.0f * p10 + p20);
    float gy = (p20 + 2.0f * p21 + p22) - (p00 + 2.0f * p01 + p02);
    mag[y * width + x] = sqrt(gx * gx + gy * gy);
}
