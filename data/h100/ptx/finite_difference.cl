#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(16, 16, 1))) finite_difference(__global float const *__restrict__ u, __global float *__restrict__ result, int const n)
{
  __local float u_fetch[18 * 18];

  if (1 + -16 * gid(0) + -1 * lid(0) + n >= 0 && 1 + -16 * gid(1) + -1 * lid(1) + n >= 0)
    for (int u_dim_0_outer = 0; u_dim_0_outer <= ((-16 + n + -16 * gid(1) >= 0) ? 1 + -1 * lid(1) + (1 + 15 * lid(1)) / 16 : -1 * gid(1) + -1 * lid(1) + (1 + n + 15 * lid(1)) / 16); ++u_dim_0_outer)
      for (int u_dim_1_outer = 0; u_dim_1_outer <= ((-16 + n + -16 * gid(0) >= 0) ? 1 + -1 * lid(0) + (1 + 15 * lid(0)) / 16 : -1 * gid(0) + -1 * lid(0) + (1 + n + 15 * lid(0)) / 16); ++u_dim_1_outer)
        u_fetch[18 * (16 * u_dim_0_outer + lid(1)) + 16 * u_dim_1_outer + lid(0)] = u[(n + 2) * (16 * gid(1) + 16 * u_dim_0_outer + lid(1)) + 16 * gid(0) + 16 * u_dim_1_outer + lid(0)];
  barrier(CLK_LOCAL_MEM_FENCE) /* for u_fetch (insn depends on u_fetch_rule) */;
  if (-1 + -16 * gid(0) + -1 * lid(0) + n >= 0 && -1 + -16 * gid(1) + -1 * lid(1) + n >= 0)
    result[(n + 2) * (1 + 16 * gid(1) + lid(1)) + 1 + 16 * gid(0) + lid(0)] = u_fetch[18 * (1 + lid(1)) + 1 + lid(0)] * u_fetch[18 * (1 + lid(1)) + 1 + lid(0)] + -1.0f + -4.0f * u_fetch[18 * (1 + lid(1)) + 1 + lid(0)] + u_fetch[18 * (2 + lid(1)) + 1 + lid(0)] + u_fetch[18 * lid(1) + 1 + lid(0)] + u_fetch[18 * (1 + lid(1)) + 2 + lid(0)] + u_fetch[18 * (1 + lid(1)) + lid(0)];
}