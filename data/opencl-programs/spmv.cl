/* Sparse matrix times vector, y = A x, A in CSR form (row_ptr, col_idx, vals), one
 * work-item per row; each row's loop bounds come from row_ptr. */

__kernel void spmv_csr(__global const int *row_ptr, __global const int *col_idx,
                       __global const float *vals, __global const float *x,
                       __global float *y, int rows)
{
    int row = get_global_id(0);
    if (row < rows) {
        int start = row_ptr[row];
        int end = row_ptr[row + 1];
        float sum = 0.0f;
        for (int k = start; k < end; k++)
            sum += vals[k] * x[col_idx[k]];
        y[row] = sum;
    }
}
