/* Correlation (PolyBench) of m variables over n samples; data is n x m, row-major.
 * corr_stddev: mean and standard deviation of each column (a deviation at most EPS counts
 * as 1, so near-constant columns are not blown up); corr_normalize: centre and scale each
 * element (a 2-D launch); corr_corr: one work-item per column j1 fills the strictly upper
 * triangle of its row, j2 = j1+1 .. m-1, mirrors it, and sets the diagonal to 1. */
#define EPS 0.1f

__kernel void corr_stddev(__global const float *data, __global float *mean,
                          __global float *stddev, float float_n, int m, int n)
{
    int j = get_global_id(0);
    if (j < m) {
        float sum = 0.0f;
        for (int i = 0; i < n; i++)
            sum += data[i * m + j];
        float mu = sum / float_n;
        float var = 0.0f;
        for (int i = 0; i < n; i++) {
            float d = data[i * m + j] - mu;
            var += d * d;
        }
        float sd = sqrt(var / float_n);
        mean[j] = mu;
        stddev[j] = sd <= EPS ? 1.0f : sd;
    }
}

__kernel void corr_normalize(__global float *data, __global const float *mean,
                             __global const float *stddev, float float_n, int m, int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (i < n && j < m)
        data[i * m + j] = (data[i * m + j] - mean[j]) / (sqrt(float_n) * stddev[j]);
}

__kernel void corr_corr(__global const float *data, __global float *symmat, int m, int n)
{
    int j1 = get_global_id(0);
    if (j1 < m) {
        symmat[j1 * m + j1] = 1.0f;
        for (int j2 = j1 + 1; j2 < m; j2++) {
            float sum = 0.0f;
            for (int i = 0; i < n; i++)
                sum += data[i * m + j1] * data[i * m + j2];
            symmat[j1 * m + j2] = sum;
            symmat[j2 * m + j1] = sum;
        }
    }
}
