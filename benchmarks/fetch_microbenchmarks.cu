// L2 reads of kernels that load no global data (instruction and constant fetches), for a
// model of them in kernelcast.facts: kernels of growing code size (N unrolled dependent
// FMAs) launched on growing grids, under ncu (benchmarks/fetch_microbenchmarks.sh).
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("ERR %s %d\n",cudaGetErrorString(e),__LINE__);return 1;}}while(0)

template <int N>
__global__ void chain(float* out, float a, float b) {
  float x = threadIdx.x * a;
#pragma unroll
  for (int k = 0; k < N; ++k) x = x * a + b;
  if (x == -12345.f) out[blockIdx.x] = x;  // never true: keeps the chain, stores nothing
}

template <int N>
int run(float* out, int* id) {
  const int grids[] = {1, 66, 132, 264, 1320, 13200};
  for (int g : grids) {
    printf("L %d chain N=%d grid=%d block=256\n", (*id)++, N, g);
    chain<N><<<g, 256>>>(out, 1.0001f, 0.5f);
    CK(cudaDeviceSynchronize());
  }
  return 0;
}

int main() {
  float* out; CK(cudaMalloc(&out, 1 << 20));
  int id = 0;
  if (run<1>(out, &id) || run<64>(out, &id) || run<512>(out, &id) || run<4096>(out, &id)
      || run<16384>(out, &id)) return 1;
  return 0;
}
