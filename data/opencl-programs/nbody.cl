/* Gravitational N-body, the acceleration of each of n bodies (G = 1, softening eps2):
 * a_i = sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps2)^(3/2), positions and masses in
 * separate arrays. nbody_accel: one work-item per body reading every other body from
 * global memory; nbody_tiled: work-groups stage GROUP bodies at a time in local memory
 * (missing bodies past n have mass 0). */
#ifndef GROUP
#define GROUP 256
#endif

__kernel void nbody_accel(__global const float *px, __global const float *py,
                          __global const float *pz, __global const float *mass,
                          __global float *ax, __global float *ay, __global float *az,
                          float eps2, int n)
{
    int i = get_global_id(0);
    if (i < n) {
        float xi = px[i], yi = py[i], zi = pz[i];
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        for (int j = 0; j < n; j++) {
            float dx = px[j] - xi;
            float dy = py[j] - yi;
            float dz = pz[j] - zi;
            float inv = rsqrt(dx * dx + dy * dy + dz * dz + eps2);
            float s = mass[j] * inv * inv * inv;
            sx += dx * s;
            sy += dy * s;
            sz += dz * s;
        }
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}

__kernel void nbody_tiled(__global const float *px, __global const float *py,
                          __global const float *pz, __global const float *mass,
                          __global float *ax, __global float *ay, __global float *az,
                          float eps2, int n)
{
    __local float tx[GROUP];
    __local float ty[GROUP];
    __local float tz[GROUP];
    __local float tm[GROUP];
    int i = get_global_id(0);
    int lid = get_local_id(0);
    float xi = i < n ? px[i] : 0.0f;
    float yi = i < n ? py[i] : 0.0f;
    float zi = i < n ? pz[i] : 0.0f;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (int base = 0; base < n; base += GROUP) {
        int j = base + lid;
        tx[lid] = j < n ? px[j] : 0.0f;
        ty[lid] = j < n ? py[j] : 0.0f;
        tz[lid] = j < n ? pz[j] : 0.0f;
        tm[lid] = j < n ? mass[j] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int t = 0; t < GROUP; t++) {
            float dx = tx[t] - xi;
            float dy = ty[t] - yi;
            float dz = tz[t] - zi;
            float inv = rsqrt(dx * dx + dy * dy + dz * dz + eps2);
            float s = tm[t] * inv * inv * inv;
            sx += dx * s;
            sy += dy * s;
            sz += dz * s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (i < n) {
        ax[i] = sx;
        ay[i] = sy;
        az[i] = sz;
    }
}
