/* k-nearest-neighbours, the distance step: the Euclidean distance from each of nq queries
 * (nq x d, row-major) to each of n reference points (feature-major: points[f * n + p]),
 * into dist (nq x n); selecting the k smallest is another step. */

__kernel void knn_distances(__global const float *points, __global const float *queries,
                            __global float *dist, int n, int nq, int d)
{
    int p = get_global_id(0);
    int q = get_global_id(1);
    if (p < n && q < nq) {
        float sum = 0.0f;
        for (int f = 0; f < d; f++) {
            float diff = points[f * n + p] - queries[q * d + f];
            sum = mad(diff, diff, sum);
        }
        dist[q * n + p] = native_sqrt(sum);
    }
}
