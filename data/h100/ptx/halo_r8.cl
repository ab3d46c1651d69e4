#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(64, 4, 1))) halo_r8(__global float const *__restrict__ u, __global float *__restrict__ out, int const n)
{
  float acc_k;
  __local float u_fetch[20 * 80];

  if (-1 + -64 * gid(0) + -1 * lid(0) + n >= 0 && -1 + -4 * gid(1) + -1 * lid(1) + n >= 0)
    acc_k = 0.0f;
  if (15 + -64 * gid(0) + -1 * lid(0) + n >= 0)
    for (int u_dim_0_outer = 0; u_dim_0_outer <= ((-1 * n + 4 * gid(1) + lid(1) >= 0) ? 3 : 4); ++u_dim_0_outer)
      for (int u_dim_1_outer = 0; u_dim_1_outer <= ((-64 + n + -64 * gid(0) >= 0) ? 1 + -1 * lid(0) + (15 + 63 * lid(0)) / 64 : -1 * gid(0) + -1 * lid(0) + (15 + n + 63 * lid(0)) / 64); ++u_dim_1_outer)
        u_fetch[80 * (4 * u_dim_0_outer + lid(1)) + 64 * u_dim_1_outer + lid(0)] = u[(n + 16) * (4 * gid(1) + 4 * u_dim_0_outer + lid(1)) + 64 * gid(0) + 64 * u_dim_1_outer + lid(0)];
  barrier(CLK_LOCAL_MEM_FENCE) /* for u_fetch (insn_k_update depends on u_fetch_rule) */;
  if (-1 + -64 * gid(0) + -1 * lid(0) + n >= 0 && -1 + -4 * gid(1) + -1 * lid(1) + n >= 0)
  {
    for (int k = 0; k <= 16; ++k)
      acc_k = acc_k + u_fetch[80 * (k + lid(1)) + 8 + lid(0)] + u_fetch[80 * (8 + lid(1)) + k + lid(0)];
    out[n * (4 * gid(1) + lid(1)) + 64 * gid(0) + lid(0)] = acc_k;
  }
}