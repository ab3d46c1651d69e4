#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(256, 1, 1))) nbody(__global float const *__restrict__ x, int const n, __global float *__restrict__ pot)
{
  float acc_j_outer_j_inner;
  float acc_k;
  float x_i_fetch[3];
  __local float x_j_fetch[3 * 256];

  if (-1 + -256 * gid(0) + -1 * lid(0) + n >= 0)
  {
    acc_j_outer_j_inner = 0.0f;
    x_i_fetch[0] = x[3 * (256 * gid(0) + lid(0))];
    x_i_fetch[1] = x[1 + 3 * (256 * gid(0) + lid(0))];
    x_i_fetch[2] = x[2 + 3 * (256 * gid(0) + lid(0))];
  }
  for (int j_outer = 0; j_outer <= -1 + (255 + n) / 256; ++j_outer)
  {
    barrier(CLK_LOCAL_MEM_FENCE) /* for x_j_fetch (x_j_fetch_rule rev-depends on insn_k_update) */;
    if (-1 + -256 * j_outer + -1 * lid(0) + n >= 0)
      for (int xj_k = 0; xj_k <= 2; ++xj_k)
        x_j_fetch[256 * xj_k + lid(0)] = x[xj_k + 3 * (256 * j_outer + lid(0))];
    barrier(CLK_LOCAL_MEM_FENCE) /* for x_j_fetch (insn_k_update depends on x_j_fetch_rule) */;
    if (-1 + -1 * lid(0) + -256 * gid(0) + n >= 0)
      for (int j_inner = 0; j_inner <= ((-256 + n + -256 * j_outer >= 0) ? 255 : -1 + n + -256 * j_outer); ++j_inner)
      {
        acc_k = 0.0f;
        if (lid(0) + gid(0) * 256 != j_inner + j_outer * 256)
          for (int k = 0; k <= 2; ++k)
            acc_k = acc_k + (x_i_fetch[k] + -1.0f * x_j_fetch[256 * k + j_inner]) * (x_i_fetch[k] + -1.0f * x_j_fetch[256 * k + j_inner]);
        acc_j_outer_j_inner = acc_j_outer_j_inner + ((lid(0) + gid(0) * 256 != j_inner + j_outer * 256) ? rsqrt(acc_k) : (float) (0.0f));
      }
  }
  if (-1 + -256 * gid(0) + -1 * lid(0) + n >= 0)
    pot[256 * gid(0) + lid(0)] = acc_j_outer_j_inner;
}