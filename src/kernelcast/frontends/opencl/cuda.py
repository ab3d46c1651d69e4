"""OpenCL C kernels as CUDA C++, for NVIDIA's tools: Nsight Compute profiles CUDA
launches, not OpenCL ones, so a kernel's predicted counters are checked against a profile
of its translation (benchmarks/opencl_counters.py), and NVRTC compiles it.

The translation is a prelude of definitions, not a rewrite: OpenCL's address space
qualifiers and ``__kernel`` become CUDA's (``__local`` is ``__shared__``, ``__global``
and ``__private`` nothing); the work-item functions read CUDA's thread and block indices
(dimension d of OpenCL is x, y, z); ``barrier`` is ``__syncthreads``; the built-ins
CUDA lacks or names otherwise (``mad``, ``clamp``, ``native_*``, ``convert_*`` with
OpenCL's conversions, ``INFINITY`` …) are defined; OpenCL's short type names are
typedefs. A ``__constant`` array at program scope is CUDA's ``__constant__``; a
``__constant`` kernel argument is a ``const`` pointer (it reads through L1, where
OpenCL's compiler may use the constant cache). The work dimensions are a macro,
``KERNELCAST_WORK_DIM``, given at compile time (``work_dim_option``). Vector types and
image functions are not translated: NVRTC's error names them.

Public names: to_cuda, work_dim_option, PRELUDE.
"""

from __future__ import annotations

import re

PRELUDE = r"""// OpenCL C built-ins in CUDA C++ (kernelcast.frontends.opencl.cuda)
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
#define __kernel extern "C" __global__
#define __global
#define __private
#define __local __shared__
#define __read_only
#define __write_only
#define restrict __restrict__
#define CLK_LOCAL_MEM_FENCE 1
#define CLK_GLOBAL_MEM_FENCE 2
#define barrier(flags) __syncthreads()
#define mem_fence(flags) __threadfence_block()
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define MAXFLOAT 3.402823466e+38F
#define FLT_MAX 3.402823466e+38F
#define DBL_MAX 1.7976931348623158e+308
#define M_PI_F 3.14159274101257f
#define M_PI 3.141592653589793
#ifndef KERNELCAST_WORK_DIM
#define KERNELCAST_WORK_DIM 3
#endif
__device__ static inline size_t kc_dim(uint d, unsigned x, unsigned y, unsigned z)
{ return d == 0 ? x : d == 1 ? y : d == 2 ? z : 0; }
#define get_work_dim() ((uint)KERNELCAST_WORK_DIM)
#define get_local_id(d) kc_dim((d), threadIdx.x, threadIdx.y, threadIdx.z)
#define get_group_id(d) kc_dim((d), blockIdx.x, blockIdx.y, blockIdx.z)
#define get_local_size(d) ((d) < 3 ? kc_dim((d), blockDim.x, blockDim.y, blockDim.z) : 1)
#define get_num_groups(d) ((d) < 3 ? kc_dim((d), gridDim.x, gridDim.y, gridDim.z) : 1)
#define get_global_id(d) (get_group_id(d) * get_local_size(d) + get_local_id(d))
#define get_global_size(d) (get_num_groups(d) * get_local_size(d))
#define get_global_offset(d) ((size_t)0)
template <class T> __device__ static inline T mad(T a, T b, T c) { return a * b + c; }
template <class T, class U, class V> __device__ static inline T clamp(T x, U lo, V hi)
{ return x < (T)lo ? (T)lo : x > (T)hi ? (T)hi : x; }
#define native_exp __expf
#define native_log __logf
#define native_sqrt sqrtf
#define native_rsqrt rsqrtf
#define native_recip(x) (1.0f / (x))
#define native_divide __fdividef
#define native_sin __sinf
#define native_cos __cosf
#define native_powr __powf
#define half_exp __expf
#define half_log __logf
#define half_sqrt sqrtf
#define convert_char(x) ((char)(x))
#define convert_uchar(x) ((uchar)(x))
#define convert_short(x) ((short)(x))
#define convert_ushort(x) ((ushort)(x))
#define convert_int(x) ((int)(x))
#define convert_uint(x) ((uint)(x))
#define convert_long(x) ((long)(x))
#define convert_ulong(x) ((ulong)(x))
#define convert_float(x) ((float)(x))
#define convert_double(x) ((double)(x))
__device__ static inline uchar convert_uchar_sat(float x)
{ return x != x ? 0 : x <= 0.0f ? 0 : x >= 255.0f ? 255 : (uchar)x; }
__device__ static inline int convert_int_sat(float x)
{ return x != x ? 0 : x <= -2147483648.0f ? (-2147483647 - 1)
  : x >= 2147483647.0f ? 2147483647 : (int)x; }
#line 1
"""

# a __constant at program scope is CUDA's __constant__ (to_cuda); any other (a kernel
# argument's qualifier) reads as const
_CONSTANT = re.compile(r"\b__constant\b(?!__)")
_PRAGMA = re.compile(r"^\s*#\s*pragma\s+OPENCL\b.*$", re.MULTILINE)


def to_cuda(source: str) -> str:
    """The CUDA C++ text of OpenCL C *source* (see the module docstring)."""
    text = _PRAGMA.sub("", source)
    depth, out, start = 0, [], 0
    for match in re.finditer(r"[{}]|^\s*__constant\b", text, re.MULTILINE):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        elif depth == 0:  # a program-scope constant
            out.append(text[start:match.end()] + "__")
            start = match.end()
    text = "".join(out) + text[start:]
    text = _CONSTANT.sub("const", text)
    return PRELUDE + text


def work_dim_option(global_size) -> str:
    """The compile option that gives the translation its work dimensions."""
    return f"-DKERNELCAST_WORK_DIM={len(global_size)}"
