// Cache-behaviour microbenchmarks behind kernelcast.facts.caches (MEASURED): run by
// benchmarks/cache_microbenchmarks.sh on the GPU machine under ncu; results in data/h100/caches.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e!=cudaSuccess){printf("ERR %s %d\n",cudaGetErrorString(e),__LINE__);exit(1);}}while(0)

__global__ void copy(const float* x, float* y, long n){ long i=blockIdx.x*(long)blockDim.x+threadIdx.x; if(i<n) y[i]=x[i]; }
__global__ void read_stride(const float* x, float* out, long stride){ long i=blockIdx.x*(long)blockDim.x+threadIdx.x; float v=x[i*stride];
  if(v==-12345.f) out[blockIdx.x]=v; }
__global__ void write_stride(float* y, long stride){ long i=blockIdx.x*(long)blockDim.x+threadIdx.x; y[i*stride]=(float)i; }
// group g reads chunk (g % m) of 4096 floats (16 KB) -> reuse distance of m chunks
__global__ void cyc_read(const float* x, float* out, long m){ long c=blockIdx.x % m; const float* p=x+c*4096; float s=0;
  for(int k=0;k<16;k++) s+=p[k*256+threadIdx.x]; if(s==-12345.f) out[blockIdx.x]=s; }
// each block re-reads its own chunk of fe floats, passes times
__global__ void l1_reuse(const float* x, float* out, int fe, int passes){ const float* p=x+(long)blockIdx.x*fe; float s=0;
  for(int r=0;r<passes;r++) for(int k=threadIdx.x;k<fe;k+=blockDim.x) s+=p[k]*(r+1); if(s==-12345.f) out[blockIdx.x]=s; }
// store, barrier, load data another warp stored
__global__ void store_load(float* y, float* out){ long b=(long)blockIdx.x*256; y[b+threadIdx.x]=threadIdx.x; __syncthreads();
  float v=y[b+(threadIdx.x+32)%256]; if(v==-12345.f) out[blockIdx.x]=v; }
__global__ void matmul(const float* A, const float* B, float* C, int n){ int i=blockIdx.y*16+threadIdx.y, j=blockIdx.x*16+threadIdx.x; float s=0;
  for(int k=0;k<n;k++) s+=A[(long)i*n+k]*B[(long)k*n+j]; C[(long)i*n+j]=s; }
__global__ void stencil(const float* x, float* y, int n){ int i=blockIdx.y*16+threadIdx.y, j=blockIdx.x*16+threadIdx.x;
  if(i>0&&j>0&&i<n-1&&j<n-1) y[(long)i*n+j]=x[(long)i*n+j]+x[(long)(i-1)*n+j]+x[(long)(i+1)*n+j]+x[(long)i*n+j-1]+x[(long)i*n+j+1]; }
__global__ void transpose(const float* x, float* y, int n){ int i=blockIdx.y*16+threadIdx.y, j=blockIdx.x*16+threadIdx.x; y[(long)j*n+i]=x[(long)i*n+j]; }

int main(){
  size_t big=(size_t)1<<30; float *a,*b,*c,*o; CK(cudaMalloc(&a,big)); CK(cudaMalloc(&b,big)); CK(cudaMalloc(&c,big)); CK(cudaMalloc(&o,1<<24));
  CK(cudaMemset(a,0,big)); CK(cudaMemset(b,0,big)); CK(cudaMemset(c,0,big)); CK(cudaMemset(o,0,1<<24)); CK(cudaDeviceSynchronize());
  int id=0;
  long ns[]={1L<<15,1L<<18,1L<<20,1L<<22,1L<<24,1L<<26};
  for(long n: ns){ copy<<<n/256,256>>>(a,b,n); printf("L %d copy n=%ld\n",id++,n); }
  long st[]={1,2,8,16,32};
  for(long s: st){ read_stride<<<(1<<20)/256,256>>>(a,o,s); printf("L %d read_stride threads=1048576 stride=%ld\n",id++,s); }
  for(long s: st){ write_stride<<<(1<<20)/256,256>>>(b,s); printf("L %d write_stride threads=1048576 stride=%ld\n",id++,s); }
  long mb[]={4,8,16,20,24,28,32,40,48,64};
  for(long m: mb){ long chunks=m*64; cyc_read<<<chunks*3,256>>>(a,o,chunks); printf("L %d cyc_read footprint_mb=%ld reps=3 groups=%ld\n",id++,m,chunks*3); }
  int fk[]={8,32,64,128,160,192,224};
  for(int f: fk){ int fe=f*256; l1_reuse<<<132,256>>>(a,o,fe,4); printf("L %d l1_reuse groups=132 footprint_kb=%d passes=4\n",id++,f); }
  for(int f: fk){ int fe=f*256; l1_reuse<<<132*4,256>>>(a,o,fe/4,4); printf("L %d l1_reuse groups=528 footprint_kb=%d passes=4\n",id++,f/4); }
  store_load<<<4096,256>>>(b,o); printf("L %d store_load groups=4096\n",id++);
  int mm[]={512,1024,2048,4096};
  for(int n: mm){ matmul<<<dim3(n/16,n/16),dim3(16,16)>>>(a,b,c,n); printf("L %d matmul n=%d\n",id++,n); }
  int sn[]={1024,4096,8192};
  for(int n: sn){ stencil<<<dim3(n/16,n/16),dim3(16,16)>>>(a,b,n); printf("L %d stencil n=%d\n",id++,n); }
  for(int n: sn){ transpose<<<dim3(n/16,n/16),dim3(16,16)>>>(a,b,n); printf("L %d transpose n=%d\n",id++,n); }
  CK(cudaDeviceSynchronize()); printf("done %d\n",id); return 0; }
