#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1))) parallelism_local(__global float const *__restrict__ a, __global float *__restrict__ out, __global float const *__restrict__ x, int const m, int const n)
{
  float acc_k_outer_k_inner;
  __local float x_fetch[256];

  if (-1 + -256 * gid(0) + -1 * lid(0) + n >= 0)
    acc_k_outer_k_inner = 0.0f;
  for (int k_outer = 0; k_outer <= (-256 + m) / 256; ++k_outer)
  {
    barrier(CLK_LOCAL_MEM_FENCE) /* for x_fetch (x_fetch_rule rev-depends on insn_k_outer_k_inner_update) */;
    x_fetch[lid(0)] = x[256 * k_outer + lid(0)];
    barrier(CLK_LOCAL_MEM_FENCE) /* for x_fetch (insn_k_outer_k_inner_update depends on x_fetch_rule) */;
    if (-1 + -1 * lid(0) + -256 * gid(0) + n >= 0)
      for (int k_inner = 0; k_inner <= 255; ++k_inner)
        acc_k_outer_k_inner = acc_k_outer_k_inner + x_fetch[k_inner] * x_fetch[k_inner];
  }
  if (-1 + -256 * gid(0) + -1 * lid(0) + n >= 0)
    out[256 * gid(0) + lid(0)] = a[256 * gid(0) + lid(0)] * acc_k_outer_k_inner;
}