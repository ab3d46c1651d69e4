#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1))) parallelism_columns(__global float const *__restrict__ a, __global float const *__restrict__ b, __global float *__restrict__ out, int const m, int const n)
{
  float acc_k;

  if (-1 + -256 * gid(0) + -1 * lid(0) + n >= 0)
  {
    acc_k = 0.0f;
    for (int k = 0; k <= -1 + m; ++k)
      acc_k = acc_k + a[n * k + 256 * gid(0) + lid(0)] * b[n * k + 256 * gid(0) + lid(0)];
    out[256 * gid(0) + lid(0)] = acc_k;
  }
}