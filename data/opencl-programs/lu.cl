/* LU decomposition (PolyBench), the trailing update of step k on an n x n matrix whose row
 * k is already divided by its pivot: A[i][j] -= A[i][k] * A[k][j] for i, j > k. The launch
 * covers the (n-k-1) x (n-k-1) trailing block, rounded up to whole work-groups. */

__kernel void lu_update(__global float *A, int k, int n)
{
    int j = get_global_id(0) + k + 1;
    int i = get_global_id(1) + k + 1;
    if (i < n && j < n)
        A[i * n + j] -= A[i * n + k] * A[k * n + j];
}
