#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(32, 8, 1))) halo_r2(__global float const *__restrict__ u, __global float *__restrict__ out, int const n)
{
  float acc_k;
  __local float u_fetch[12 * 36];

  if (-1 + -32 * gid(0) + -1 * lid(0) + n >= 0 && -1 + -8 * gid(1) + -1 * lid(1) + n >= 0)
    acc_k = 0.0f;
  if (3 + -32 * gid(0) + -1 * lid(0) + n >= 0 && 3 + -8 * gid(1) + -1 * lid(1) + n >= 0)
    for (int u_dim_0_outer = 0; u_dim_0_outer <= ((-8 + n + -8 * gid(1) >= 0) ? 1 + -1 * lid(1) + (3 + 7 * lid(1)) / 8 : -1 * gid(1) + -1 * lid(1) + (3 + n + 7 * lid(1)) / 8); ++u_dim_0_outer)
      for (int u_dim_1_outer = 0; u_dim_1_outer <= ((-32 + n + -32 * gid(0) >= 0) ? 1 + -1 * lid(0) + (3 + 31 * lid(0)) / 32 : -1 * gid(0) + -1 * lid(0) + (3 + n + 31 * lid(0)) / 32); ++u_dim_1_outer)
        u_fetch[36 * (8 * u_dim_0_outer + lid(1)) + 32 * u_dim_1_outer + lid(0)] = u[(n + 4) * (8 * gid(1) + 8 * u_dim_0_outer + lid(1)) + 32 * gid(0) + 32 * u_dim_1_outer + lid(0)];
  barrier(CLK_LOCAL_MEM_FENCE) /* for u_fetch (insn_k_update depends on u_fetch_rule) */;
  if (-1 + -32 * gid(0) + -1 * lid(0) + n >= 0 && -1 + -8 * gid(1) + -1 * lid(1) + n >= 0)
  {
    for (int k = 0; k <= 4; ++k)
      acc_k = acc_k + u_fetch[36 * (k + lid(1)) + 2 + lid(0)] + u_fetch[36 * (2 + lid(1)) + k + lid(0)];
    out[n * (8 * gid(1) + lid(1)) + 32 * gid(0) + lid(0)] = acc_k;
  }
}