#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1))) guarded_special(__global float *__restrict__ out, __global float const *__restrict__ a, int const m, int const ng)
{
  float acc;
  __local float tile[256];

  tile[lid(0)] = a[256 * gid(0) + lid(0)];
  acc = 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE) /* for tile (step depends on fill) */;
  for (int k = 0; k <= -1 + m; ++k)
    if (k != lid(0))
      acc = acc + rsqrt(tile[lid(0) + k & 255]);
  out[256 * gid(0) + lid(0)] = acc;
}