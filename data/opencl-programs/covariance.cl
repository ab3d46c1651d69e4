/* Covariance (PolyBench) of m variables over n samples; data is n x m, row-major.
 * cov_mean: the mean of each column; cov_center: data minus its column mean (a 2-D
 * launch); cov_covar: one work-item per column j1 computes the upper triangle of its row,
 * j2 = j1 .. m-1, and mirrors it. */

__kernel void cov_mean(__global const float *data, __global float *mean, float float_n,
                       int m, int n)
{
    int j = get_global_id(0);
    if (j < m) {
        float sum = 0.0f;
        for (int i = 0; i < n; i++)
            sum += data[i * m + j];
        mean[j] = sum / float_n;
    }
}

__kernel void cov_center(__global float *data, __global const float *mean, int m, int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < n && j < m)
        data[i * m + j] -= mean[j];
}

__kernel void cov_covar(__global const float *data, __global float *symmat, float float_n,
                        int m, int n)
{
    int j1 = get_global_id(0);
    if (j1 < m) {
        for (int j2 = j1; j2 < m; j2++) {
            float sum = 0.0f;
            for (int i = 0; i < n; i++)
                sum += data[i * m + j1] * data[i * m + j2];
            sum = sum / (float_n - 1.0f);
            symmat[j1 * m + j2] = sum;
            symmat[j2 * m + j1] = sum;
        }
    }
}
