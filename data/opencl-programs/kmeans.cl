/* k-means, the assignment step: each of n points (d features, stored feature-major:
 * points[f * n + p]) takes the index of its nearest of k centroids (k x d, row-major) by
 * squared Euclidean distance; the first one wins a tie. */

__kernel void kmeans_assign(__global const float *points, __global const float *centroids,
                            __global int *membership, int n, int k, int d)
{
    int p = get_global_id(0);
    if (p < n) {
        int best = 0;
        float best_dist = FLT_MAX;
        for (int c = 0; c < k; c++) {
            float dist = 0.0f;
            for (int f = 0; f < d; f++) {
                float diff = points[f * n + p] - centroids[c * d + f];
                dist += diff * diff;
            }
            if (dist < best_dist) {
                best_dist = dist;
                best = c;
            }
        }
        membership[p] = best;
    }
}
