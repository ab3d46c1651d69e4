#define lid(N) ((int) get_local_id(N))
#define gid(N) ((int) get_group_id(N))

__kernel void __attribute__ ((reqd_work_group_size(16, 16, 1))) convolution(__global float const *__restrict__ m, __global float const *__restrict__ f, __global float *__restrict__ r, int const n)
{
  float acc_c_xi_eta;
  __local float f_fetch[3 * 7 * 7];
  __local float m_fetch[3 * 22 * 22];

  if (6 + -1 * lid(0) >= 0 && 6 + -1 * lid(1) >= 0)
    for (int f_dim_1 = 0; f_dim_1 <= 2; ++f_dim_1)
      f_fetch[49 * f_dim_1 + 7 * lid(1) + lid(0)] = f[147 * gid(2) + 49 * f_dim_1 + 7 * lid(1) + lid(0)];
  for (int i = 0; i <= 2; ++i)
  {
    if (-1 + -1 * lid(0) + -16 * gid(0) + n >= 0 && -1 + -1 * lid(1) + -16 * gid(1) + n >= 0)
      acc_c_xi_eta = 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE) /* for m_fetch (m_fetch_rule rev-depends on insn_c_xi_eta_update) */;
    if (5 + -1 * lid(0) + -16 * gid(0) + n >= 0 && 5 + -1 * lid(1) + -16 * gid(1) + n >= 0)
      for (int m_dim_1 = 0; m_dim_1 <= 2; ++m_dim_1)
        for (int m_dim_2_outer = 0; m_dim_2_outer <= ((-16 + n + -16 * gid(1) >= 0) ? 1 + -1 * lid(1) + (5 + 15 * lid(1)) / 16 : -1 * lid(1) + -1 * gid(1) + (5 + n + 15 * lid(1)) / 16); ++m_dim_2_outer)
          for (int m_dim_3_outer = 0; m_dim_3_outer <= ((-16 + n + -16 * gid(0) >= 0) ? 1 + -1 * lid(0) + (5 + 15 * lid(0)) / 16 : -1 * lid(0) + -1 * gid(0) + (5 + n + 15 * lid(0)) / 16); ++m_dim_3_outer)
            m_fetch[484 * m_dim_1 + 22 * (16 * m_dim_2_outer + lid(1)) + 16 * m_dim_3_outer + lid(0)] = m[(n + 6) * (n + 6) * 3 * i + (n + 6) * (n + 6) * m_dim_1 + (n + 6) * (16 * gid(1) + 16 * m_dim_2_outer + lid(1)) + 16 * gid(0) + 16 * m_dim_3_outer + lid(0)];
    barrier(CLK_LOCAL_MEM_FENCE) /* for m_fetch (insn_c_xi_eta_update depends on m_fetch_rule) */;
    if (-1 + -1 * lid(0) + -16 * gid(0) + n >= 0 && -1 + -1 * lid(1) + -16 * gid(1) + n >= 0)
    {
      for (int c = 0; c <= 2; ++c)
        for (int eta = -3; eta <= 3; ++eta)
          for (int xi = -3; xi <= 3; ++xi)
            acc_c_xi_eta = acc_c_xi_eta + m_fetch[484 * c + 22 * (3 + -1 * xi + lid(1)) + 3 + -1 * eta + lid(0)] * f_fetch[24 + 49 * c + 7 * xi + eta];
      r[n * n * 3 * i + n * n * gid(2) + n * (16 * gid(1) + lid(1)) + 16 * gid(0) + lid(0)] = acc_c_xi_eta;
    }
  }
}