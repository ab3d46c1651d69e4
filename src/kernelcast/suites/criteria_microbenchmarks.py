"""The fine-grained model's microbenchmarks (shared/seeds 003, §III): CUDA C++ kernels with
inline PTX, one per functional component and intensity, written so that the PTX and SASS
checks of kernelcast.facts.ptx_checks can verify P1 (stressing), P3 (selectivity)
and the absence of constant folding after each compilation step (the paper's Figure 2).

Every kernel is ``extern "C" __global__ void NAME(long long *clocks, unsigned *sink,
unsigned *buffer)``: its inputs come from ``clock()`` and ``threadIdx`` (Figure 3, rows 1-2);
the timed region, between two ``clock64()`` reads, is a straight-line sequence of
``asm volatile`` statements made by the paper's template recursion: ``body<N>`` runs a
fully unrolled ``#pragma unroll`` loop of UNROLL steps and calls ``body<N - 1>``, down to
``body<0>``, so ``ops_per_thread = statements per step * UNROLL * DEPTH`` with no loop
back-edge (nothing is repeated by an outer loop). Thread 0 of each block writes the
region's clock cycles to ``clocks[blockIdx.x]``; every thread writes a value that depends on
all its results to ``sink[global id]``.

Families:

- arithmetic throughput: 8 accumulators; step j computes ``a_j = a_j OP a_{j+1}``
  (indices mod 8; lop3: ``a_j = LOP3(a_j, a_{j+1}, a_{j+2})``; unary: ``a_j = OP(a_j)``), so
  the 8 operations of a step are (nearly) independent; launched to fill the GPU.
- arithmetic latency: one dependent chain through a ring of 8 registers; step j computes
  ``a_j = a_j OP a_{j-1}`` (lop3: ``LOP3(a_j, a_{j-1}, a_{j-2})``; unary:
  ``a_j = OP(a_{j-1})``): every operation reads the previous one's result; one warp.
  In both, every result is read twice later on: ptxas fuses two dependent adds of a chain
  with a fixed operand into one 3-input IADD3 and cancels ``x ^ y ^ y`` (seen with CUDA
  13.0); see Op for the forms of the logic ops and rcp.
- shared memory, ``ways`` in 1, 2, 4, 8, 16, 32: a dependent chain of ``ld.shared.u32``
  (pointer chasing through a table whose words hold their own shared address); lane l reads
  word ``l * ways`` (stride ``ways`` words), which puts ``ways`` lanes of a warp on each of
  32 / ways banks of the 32 four-byte banks; ways = 1 has no conflict.
- divergence (F_Divergence), d = 0, 1/8, ..., 1: steps of 8 if/else statements on a
  value computed before the region, the first 8d splitting each warp in half, the rest
  uniform over a warp; each side is SIDE adds; the targets are the conditional branches.
- memory (the paper's §V latencies and throughputs): pointer chasing ``p = *p`` through
  64-bit addresses that the kernel writes into its buffer region on the first launch:
  load latency (one warp, one chain) and load throughput (8 chains per thread, full GPU)
  at an L1 (``ld.global.ca``), L2 (``ld.global.cg``) and DRAM footprint; store throughput
  (``st.global.u64`` at compile-time offsets) at an L2 and a DRAM footprint, and to
  shared memory (``st.shared.u32``, conflict-free). Registers have no benchmark of their
  own: ptxas removes register-to-register moves, even ``asm volatile`` mov chains (seen
  with CUDA 13.0); every arithmetic latency chain reads and writes registers.
- DRAM and arithmetic intensity (F_DRAMThr, F_ARITHThr): 1 to 16 warps of each 16-warp
  block chase one DRAM chain, or run the f32 add latency chain; the others return.

Microbenchmark.buffer_words is the buffer the runner must allocate (zero-filled).

Measuring them on an NVIDIA GPU (``measure_microbenchmarks``; cupy, nvcc and nvdisasm):
each is compiled for the device with nvcc, to PTX and to a cubin
(``compile_microbenchmark``, which needs no GPU), the cubin disassembled with nvdisasm,
both checked (kernelcast.facts.ptx_checks: the paper's Figure 2 b and c), and the cubin
timed with cupy (``time_microbenchmark``): WARMUP launches, then RUNS timed ones (CUDA
events), every time kept, and the clock64 cycles each block spent in its timed region
(their median and maximum in the fastest run, and the median of every run); the
bank-conflict ones also as one warp alone (``one_warp``). The document it writes,
OUT/microbenchmarks.json (device, driver, clocks, per microbenchmark its times, cycles
and checks), is what the criteria model is fitted from
(kernelcast.fitting.microbenchmarks); OUT/listings.tar.xz keeps each .cu, .ptx and .sass.

Public names: SUITE, Microbenchmark, Op, OPS, SM_COUNT, FILL_GRID, FILL_BLOCK, DEPTH,
UNROLL, CHAINS, WAYS, TABLE_WORDS, SIDE, DIVERGENCE_UNROLL, ROW, LEVELS, CACHE_OPERATOR,
SASS_LOAD, FOOTPRINT, INTENSITY_BLOCK, INTENSITY_WARPS, INTENSITY_FOOTPRINT, arithmetic,
throughput, latency, shared_conflicts, divergence, load_latency, load_throughput,
store_throughput, shared_store_throughput, dram_intensity, arith_intensity,
microbenchmarks, kernel_name_of, WARMUP, RUNS, compile_microbenchmark,
time_microbenchmark, device_info, measure_microbenchmarks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kernelcast.errors import KernelcastError, ParameterError

#: the suite name a criteria profile records (its provenance's suite)
SUITE = "criteria-microbenchmarks"

SM_COUNT = 132           # H100 SXM; only sets the default launch (grid is a parameter)
FILL_BLOCK = 256
FILL_GRID = SM_COUNT * 8  # 8 blocks of 256 per SM: 2048 threads, the SM's maximum
DEPTH = 8                # template recursion depth (Figure 3's N)
UNROLL = 64              # #pragma unroll trip count of each recursion level
CHAINS = 8               # accumulators (registers) per thread
WAYS = (1, 2, 4, 8, 16, 32)
TABLE_WORDS = 1024       # shared table: 32 lanes * stride up to 32 words


@dataclass(frozen=True)
class Microbenchmark:
    """One microbenchmark: its CUDA source and default launch, what it exercises, and what
    its PTX and SASS must show (checked by kernelcast.facts.ptx_checks).
    *sass_companions* / *ptx_companions*: instructions the target's realization needs
    beside it (MUFU.SIN's FMUL.RZ range reduction, set's SEL; rcp's guard setp in PTX);
    the selectivity check does not count them as other work.
    *count*: what the checks count against ops_per_thread: ``"targets"`` (instructions
    named by ptx_target / sass_targets) or ``"branches"`` (only those under a predicate
    guard: conditional branches, the divergence family).
    *buffer_words*: 32-bit words the runner allocates for ``buffer`` (zero-filled; the
    memory kernels initialise what they chase themselves)."""

    name: str
    component: str
    kind: str
    source: str
    kernel_name: str
    block: int
    grid: int
    ops_per_thread: int
    ptx_target: str
    sass_targets: tuple[str, ...]
    params: dict = field(hash=False)
    sass_companions: tuple[str, ...] = ()
    ptx_companions: tuple[str, ...] = ()
    count: str = "targets"
    buffer_words: int = 1 << 20


@dataclass(frozen=True)
class Op:
    """An arithmetic operation: its name in benchmark names, data type label (int, f32,
    f64), component, the PTX instruction, its SASS realization on sm_90 (opcode names, see
    docs/criteria.md), SASS companions, and the asm *form*:

    - ``binary``: ``a = a OP b``;
    - ``lop3``: ``lop3.b32 a, a, b, c, LUT`` (and/or/xor of three registers): ptxas merges
      two dependent 2-input logic ops into one 3-input LOP3 and cancels ``x ^ y ^ y``, so
      and.b32/or.b32/xor.b32 chains lose about half their instructions in SASS (seen with
      CUDA 13.0); two dependent 3-input LOP3 cannot merge;
    - ``unary``: ``a = OP(b)``;
    - ``guarded``: ``@p a = OP(b)``, p a dynamic predicate that is true (the seed is not
      0x5A5A5A5A): ptxas folds ``rcp(rcp(x))`` to x and drops the whole chain, but not
      through a guard; the guard's setp is a PTX companion that ptxas merges into one
      ISETP before the chain.
    """

    name: str
    dtype: str
    component: str
    ptx: str
    sass: tuple[str, ...]
    companions: tuple[str, ...] = ()
    form: str = "binary"
    lut: int | None = None


_GUARD_SETP = "setp.ne.u32"

OPS = (
    Op("add", "int", "int", "add.s32", ("IADD3", "IMAD.IADD", "VIADD")),
    Op("mul", "int", "int", "mul.lo.s32", ("IMAD", "IMUL")),
    Op("compare", "int", "int", "set.lt.u32.u32", ("ISETP",), ("SEL",)),
    Op("and", "int", "int", "lop3.b32", ("LOP3",), form="lop3", lut=0x80),
    Op("or", "int", "int", "lop3.b32", ("LOP3",), form="lop3", lut=0xFE),
    Op("xor", "int", "int", "lop3.b32", ("LOP3",), form="lop3", lut=0x96),
    Op("add", "f32", "f32", "add.rn.f32", ("FADD",)),
    Op("mul", "f32", "f32", "mul.rn.f32", ("FMUL",)),
    Op("sin", "f32", "f32-special", "sin.approx.ftz.f32", ("MUFU.SIN",), ("FMUL.RZ",),
       form="unary"),
    Op("rcp", "f32", "f32-special", "rcp.approx.ftz.f32", ("MUFU.RCP",), form="guarded"),
    Op("add", "f64", "f64", "add.rn.f64", ("DADD",)),
    Op("mul", "f64", "f64", "mul.rn.f64", ("DMUL",)),
)

# C type, inline-asm register constraint, initial value of accumulator j from `seed`
_TYPES = {
    "int": ("unsigned", "r", "(seed ^ ({k}u * 0x9E3779B9u)) | 1u"),
    "f32": ("float", "f", "1.0f + (float)((seed >> {j}) & 255u) * 0x1p-12f"),
    "f64": ("double", "d", "1.0 + (double)((seed >> {j}) & 255u) * 0x1p-12"),
}

_HELPERS = """\
__device__ __forceinline__ unsigned bits(unsigned x) { return x; }
__device__ __forceinline__ unsigned bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ unsigned bits(double x) {
  unsigned long long b = (unsigned long long)__double_as_longlong(x);
  return (unsigned)b ^ (unsigned)(b >> 32);
}
"""


def kernel_name_of(name: str) -> str:
    """A benchmark name as a C identifier: 'throughput/int/add' -> 'throughput_int_add',
    'divergence/d-0.375' -> 'divergence_d_0_375'."""
    return name.replace("/", "_").replace("-", "_").replace(".", "_")


def _source(name: str, kernel: str, ctype: str, constraint: str, names: list[str],
            steps: list[str], init: list[str], sink: str, depth: int, defines: str = "",
            prologue: str = "", unroll: int = UNROLL) -> str:
    """The common skeleton: defines, the recursive template body over the registers
    *names* (passed by reference) and the seed (by value), the kernel."""
    params = ", ".join([f"{ctype} &{n}" for n in names] + ["unsigned seed"])
    unnamed = ", ".join([f"{ctype} &" for _ in names] + ["unsigned"])
    args = ", ".join(names + ["seed"])
    pin = ", ".join(f'"+{constraint}"({n})' for n in names)
    body = "\n".join("    " + s for s in steps)
    inits = "\n".join("  " + s for s in init)
    return f"""\
// kernelcast criteria microbenchmark {name} (generated; docs/criteria.md)
#define DEPTH {depth}
#define UNROLL {unroll}
{defines}
{_HELPERS}
// Figure 3's template recursion: UNROLL steps fully unrolled, then body<N - 1>.
template <int N>
__device__ __forceinline__ void body({params}) {{
  (void)seed;  // read by guarded operations only
#pragma unroll
  for (int i = 0; i < UNROLL; ++i) {{
{body}
  }}
  body<N - 1>({args});
}}

template <>
__device__ __forceinline__ void body<0>({unnamed}) {{}}

extern "C" __global__ void {kernel}(long long *clocks, unsigned *sink, unsigned *buffer) {{
  (void)buffer;
{prologue}  unsigned seed = (unsigned)clock() ^ (threadIdx.x * 0x01000193u);
{inits}
  // an empty asm volatile keeps the seeds' arithmetic before the start read
  asm volatile("" : {pin});
  long long start = clock64();
  body<DEPTH>({args});
  long long end = clock64();
  if (threadIdx.x == 0) clocks[blockIdx.x] = end - start;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = {sink};
}}
"""


def _step(op: Op, c: str, j: int, kind: str) -> str:
    """The asm statement of step j (see the module docstring for the pattern); *c* is the
    register constraint."""
    one, two = ((j + 1) % CHAINS, (j + 2) % CHAINS) if kind == "throughput" else \
        ((j - 1) % CHAINS, (j - 2) % CHAINS)
    if op.form == "binary":
        return f'asm volatile("{op.ptx} %0, %0, %1;" : "+{c}"(a{j}) : "{c}"(a{one}));'
    if op.form == "lop3":
        return (f'asm volatile("{op.ptx} %0, %0, %1, %2, {op.lut:#04x};" : "+{c}"(a{j}) '
                f': "{c}"(a{one}), "{c}"(a{two}));')
    src = j if kind == "throughput" else one
    if op.form == "unary":
        if src == j:
            return f'asm volatile("{op.ptx} %0, %0;" : "+{c}"(a{j}));'
        return f'asm volatile("{op.ptx} %0, %1;" : "={c}"(a{j}) : "{c}"(a{src}));'
    if src == j:
        return (f'asm volatile("{{ .reg .pred p; {_GUARD_SETP} p, %1, 0x5A5A5A5A; '
                f'@p {op.ptx} %0, %0; }}" : "+{c}"(a{j}) : "r"(seed));')
    return (f'asm volatile("{{ .reg .pred p; {_GUARD_SETP} p, %2, 0x5A5A5A5A; '
            f'@p {op.ptx} %0, %1; }}" : "+{c}"(a{j}) : "{c}"(a{src}), "r"(seed));')


def arithmetic(op: Op, kind: str, *, grid: int | None = None, block: int | None = None,
               depth: int = DEPTH) -> Microbenchmark:
    """The throughput or latency microbenchmark of *op*; *grid*, *block* default to
    filling the GPU (throughput) or one warp (latency); *depth* scales the sequence."""
    if kind not in ("throughput", "latency"):
        raise ParameterError(f"kind must be 'throughput' or 'latency', not {kind!r}")
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    fill = kind == "throughput"
    grid = grid if grid is not None else (FILL_GRID if fill else 1)
    block = block if block is not None else (FILL_BLOCK if fill else 32)
    ctype, constraint, init = _TYPES[op.dtype]
    name = f"{kind}/{op.dtype}/{op.name}"
    kernel = kernel_name_of(name)
    steps = [_step(op, constraint, j, kind) for j in range(CHAINS)]
    inits = [f"{ctype} a{j} = {init.format(j=j, k=j + 1)};" for j in range(CHAINS)]
    sink = " ^ ".join(f"bits(a{j})" for j in range(CHAINS))
    params = {"chains": CHAINS if fill else 1}
    if op.lut is not None:
        params["lut"] = op.lut
    source = _source(name, kernel, ctype, constraint, [f"a{j}" for j in range(CHAINS)],
                     steps, inits, sink, depth)
    return Microbenchmark(
        name=name, component=op.component, kind=kind, source=source, kernel_name=kernel,
        block=block, grid=grid, ops_per_thread=CHAINS * UNROLL * depth,
        ptx_target=op.ptx, sass_targets=op.sass, sass_companions=op.companions,
        ptx_companions=(_GUARD_SETP,) if op.form == "guarded" else (), params=params)


def throughput(op: Op, **kwargs) -> Microbenchmark:
    """The throughput microbenchmark of *op* (see arithmetic)."""
    return arithmetic(op, "throughput", **kwargs)


def latency(op: Op, **kwargs) -> Microbenchmark:
    """The latency microbenchmark of *op* (see arithmetic)."""
    return arithmetic(op, "latency", **kwargs)


def shared_conflicts(ways: int, *, grid: int = FILL_GRID, block: int = FILL_BLOCK,
                     depth: int = DEPTH) -> Microbenchmark:
    """The shared-memory microbenchmark with *ways*-way bank conflicts (1 = none): a
    dependent chain of ld.shared.u32 whose addresses put *ways* lanes on one bank. The
    default launch fills the GPU (throughput); grid=1, block=32 gives the latency."""
    if ways not in WAYS:
        raise ParameterError(f"ways must be one of {WAYS} (a divisor of 32), not {ways}")
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    name = f"shared/conflicts-{ways}"
    kernel = kernel_name_of(name)
    steps = ['asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));'] * CHAINS
    defines = (f"#define WAYS {ways}\n#define TABLE_WORDS {TABLE_WORDS}\n"
               "// the word lane l starts from: stride WAYS words puts WAYS lanes on a bank\n"
               "#define WORD(lane) ((lane) * WAYS % TABLE_WORDS)\n")
    prologue = """\
  // every word holds its own shared address, so p = *p stays on the same word
  __shared__ unsigned table[TABLE_WORDS];
  for (unsigned w = threadIdx.x; w < TABLE_WORDS; w += blockDim.x)
    table[w] = (unsigned)__cvta_generic_to_shared(&table[w]);
  __syncthreads();
"""
    init = ["unsigned p = (unsigned)__cvta_generic_to_shared("
            "&table[WORD(threadIdx.x & 31u)]);"]
    source = _source(name, kernel, "unsigned", "r", ["p"], steps, init, "p", depth,
                     defines=defines, prologue=prologue)
    return Microbenchmark(
        name=name, component="shared", kind="bank-conflicts", source=source,
        kernel_name=kernel, block=block, grid=grid, ops_per_thread=CHAINS * UNROLL * depth,
        ptx_target="ld.shared.u32", sass_targets=("LDS",), params={"ways": ways})


# ---------------------------------------------------------------- divergence

SIDE = 16                 # adds on each side of an if (ptxas 13.0 if-converts up to 7)
DIVERGENCE_UNROLL = 16    # steps of 8 control statements: 128 per thread at depth 1
_DIVERGENCE_DEFINES = """\
// a lane's branch values: DIVERGENT splits every warp in half, UNIFORM is the same for
// the 32 lanes of a warp (and alternates between warps)
#define DIVERGENT(t) ((t) & 1u)
#define UNIFORM(t) (((t) >> 5) & 1u)
"""


def _adds(shift: int) -> list[str]:
    """One side of a control statement: SIDE adds, a_k += a_{k + shift} (indices mod 8)."""
    return [f'  asm volatile("add.s32 %0, %0, %1;" : "+r"(a{k % CHAINS}) '
            f': "r"(a{(k + shift) % CHAINS}));' for k in range(SIDE)]


def divergence(divergent: int, *, grid: int = FILL_GRID, block: int = FILL_BLOCK,
               depth: int = 1) -> Microbenchmark:
    """F_Divergence's microbenchmark: steps of 8 if/else statements, the first *divergent*
    (0-8) of them on a value that splits each warp in half, the others on a value uniform
    over the warp; each side is SIDE adds (a different operand on each side)."""
    if not 0 <= divergent <= CHAINS:
        raise ParameterError(f"divergent must be 0 to {CHAINS}, not {divergent}")
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    fraction = divergent / CHAINS
    name = f"divergence/d-{fraction:g}"
    kernel = kernel_name_of(name)
    steps = []
    for j in range(CHAINS):
        c = "d" if j < divergent else "u"
        steps += [f'asm volatile("" : "+r"({c}));  // opaque to NVVM: the ifs stay apart',
                  f"if ({c}) {{", *_adds(1), "} else {", *_adds(3), "}"]
    ctype, _, init = _TYPES["int"]
    inits = [f"{ctype} a{j} = {init.format(k=j + 1)};" for j in range(CHAINS)]
    inits += ["unsigned d = DIVERGENT(threadIdx.x);", "unsigned u = UNIFORM(threadIdx.x);"]
    names = [f"a{j}" for j in range(CHAINS)] + ["d", "u"]
    source = _source(name, kernel, ctype, "r", names, steps, inits, " ^ ".join(names), depth,
                     defines=_DIVERGENCE_DEFINES, unroll=DIVERGENCE_UNROLL)
    return Microbenchmark(
        name=name, component="divergence", kind="divergence", source=source,
        kernel_name=kernel, block=block, grid=grid,
        ops_per_thread=CHAINS * DIVERGENCE_UNROLL * depth, ptx_target="bra",
        sass_targets=("BRA",), count="branches",
        ptx_companions=("add.s32", "setp.eq.s32", "setp.ne.s32"),
        sass_companions=("IADD3", "IMAD.IADD", "VIADD", "BSSY", "BSYNC"),
        params={"divergent_fraction": fraction})


# ---------------------------------------------------------------- memory

ROW = 32                  # eight-byte elements per row: one warp's coalesced access (256 B)
LEVELS = ("l1", "l2", "dram")
CACHE_OPERATOR = {"l1": "ca", "l2": "cg", "dram": "cg"}
# what ptxas 13.0 makes of them: .ca is a relaxed CTA-scope load, .cg a GPU-scope one
SASS_LOAD = {"ca": "LDG.E.64.STRONG.SM", "cg": "LDG.E.64.STRONG.GPU"}
# bytes of the region one block chases or stores to: latency (one warp: the whole
# footprint), throughput (each block its own)
FOOTPRINT = {("latency", "l1"): 16 << 10, ("latency", "l2"): 4 << 20,
             ("latency", "dram"): 1 << 30, ("throughput", "l1"): 8 << 10,
             ("throughput", "l2"): 8 << 10, ("throughput", "dram"): 1 << 20}
INTENSITY_BLOCK = 512     # 16 warps, 4 blocks per SM (2048 threads)
INTENSITY_WARPS = (1, 2, 3, 4, 6, 8, 12, 16)   # warps of a block that work, of 16
INTENSITY_FOOTPRINT = 2 << 20

_CHASE_PROLOGUE = """\
  // the block's region: element e holds the address of element NEXT(e). Written by the
  // first launch; a later one finds it written and leaves it (and the caches) alone.
  unsigned long long *region = (unsigned long long *)buffer
                               + (size_t)blockIdx.x * ROWS * 32u;
  if (__syncthreads_or(region[ROWS * 32u - 1u] !=
                       (unsigned long long)&region[NEXT(ROWS * 32u - 1u)]))
    for (unsigned e = threadIdx.x; e < ROWS * 32u; e += blockDim.x)
      region[e] = (unsigned long long)&region[NEXT(e)];
  __syncthreads();
"""
_FOLD = "#define FOLD(x) ((unsigned)((x) ^ ((x) >> 32)))\n"


def _chase(name: str, component: str, kind: str, *, rows: int, stride: int, chains: int,
           spacing: int, cache: str, lead: str, warm: bool, grid: int, block: int,
           depth: int, active: int | None = None) -> Microbenchmark:
    """A pointer chase through one region per block of *rows* rows: *chains* chains per
    thread (lane l on element l of a row: coalesced), each load ``p = *p`` one row of
    *stride* on; chain c of warp w starts at row (w * chains + c) * spacing + lead.
    *warm*: a pass over the region before the start read (L1). *active*: warps of a
    block that chase; the others return after the initialisation."""
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    kernel = kernel_name_of(name)
    op = f"ld.global.{cache}.u64"
    names = [f"p{c}" for c in range(chains)]
    steps = [f'asm volatile("{op} %0, [%0];" : "+l"({names[j % chains]}));'
             for j in range(CHAINS)]
    defines = (f"#define ROWS {rows}u\n#define STRIDE {stride}u\n#define CHAINS {chains}u\n"
               f"#define SPACING {spacing}u\n"
               "// the element that element e points to: the same lane, STRIDE rows on\n"
               "#define NEXT(e) (((e) + STRIDE * 32u) % (ROWS * 32u))\n"
               "// the row chain c of warp w starts from\n"
               "#define START(w, c) ((((w) * CHAINS + (c)) * SPACING + lead) % ROWS)\n"
               + _FOLD)
    prologue = _CHASE_PROLOGUE
    if active is not None:
        defines += f"#define ACTIVE_WARPS {active}u\n"
        prologue += "  if ((threadIdx.x >> 5) >= ACTIVE_WARPS) return;  // this warp idles\n"
    init = [f"unsigned lead = {lead};"]
    init += [f"unsigned long long {n} = (unsigned long long)&region[START(threadIdx.x >> 5, "
             f"{c}u) * 32u + (threadIdx.x & 31u)];" for c, n in enumerate(names)]
    if warm:
        init += ["#pragma unroll 1",
                 "for (unsigned k = 0; k < ROWS; ++k) {  // a pass brings the region into L1"]
        init += [f'  asm volatile("{op} %0, [%0];" : "+l"({n}));' for n in names] + ["}"]
    source = _source(name, kernel, "unsigned long long", "l", names, steps, init,
                     f"FOLD({' ^ '.join(names)})", depth, defines=defines, prologue=prologue)
    params = {"footprint_bytes": rows * ROW * 8, "stride_rows": stride, "chains": chains}
    if active is not None:
        params["fraction"] = active / (block // 32)
    return Microbenchmark(
        name=name, component=component, kind=kind, source=source, kernel_name=kernel,
        block=block, grid=grid, ops_per_thread=CHAINS * UNROLL * depth, ptx_target=op,
        sass_targets=(SASS_LOAD[cache],), params=params,
        buffer_words=grid * rows * ROW * 2)


def _level(level: str) -> str:
    if level not in LEVELS:
        raise ParameterError(f"level must be one of {LEVELS}, not {level!r}")
    return level


def load_latency(level: str, *, depth: int = DEPTH) -> Microbenchmark:
    """One warp chasing one chain through FOOTPRINT[latency, level] bytes with the level's
    cache operator; rows STRIDE apart spread the chain over the footprint, and the start
    row comes from the clock, so a launch does not find the last one's rows in L2."""
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    rows = FOOTPRINT["latency", _level(level)] // (ROW * 8)
    return _chase(f"memory/load-latency/{level}", level, "load-latency", rows=rows,
                  stride=(rows // (CHAINS * UNROLL * depth)) | 1, chains=1, spacing=0,
                  cache=CACHE_OPERATOR[level], lead="__shfl_sync(0xffffffffu, seed, 0)",
                  warm=level == "l1", grid=1, block=32, depth=depth)


def load_throughput(level: str, *, grid: int = FILL_GRID, block: int = FILL_BLOCK,
                    depth: int = DEPTH) -> Microbenchmark:
    """Every thread chasing 8 chains through its block's FOOTPRINT[throughput, level]
    bytes, consecutive rows; the 64 chains of a block start evenly spaced, so each DRAM
    row is read again only after the GPU has read far more than L2 holds."""
    rows = FOOTPRINT["throughput", _level(level)] // (ROW * 8)
    spacing = max(1, rows // (FILL_BLOCK // 32 * CHAINS))
    return _chase(f"memory/load-throughput/{level}", level, "load-throughput", rows=rows,
                  stride=1, chains=CHAINS, spacing=spacing, cache=CACHE_OPERATOR[level],
                  lead="0u", warm=level == "l1", grid=grid, block=block, depth=depth)


def store_throughput(level: str, *, grid: int = FILL_GRID, block: int = FILL_BLOCK,
                     depth: int = DEPTH) -> Microbenchmark:
    """Every thread storing 8-byte words (st.global.u64) to its block's FOOTPRINT bytes:
    store k of the block is slab k mod SLABS (a slab: FILL_BLOCK consecutive words,
    thread t writes word t). Stores are not cached in L1, so there is no l1 level."""
    if level not in ("l2", "dram"):
        raise ParameterError(f"level must be 'l2' or 'dram', not {level!r}")
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    name = f"memory/store-throughput/{level}"
    kernel = kernel_name_of(name)
    slabs = FOOTPRINT["throughput", level] // (FILL_BLOCK * 8)
    names = [f"a{j}" for j in range(CHAINS)]
    steps = [f'asm volatile("st.global.u64 [%0], %1;" :: "l"(q + SLOT(N, i, {j})), '
             f'"l"(a{j}));' for j in range(CHAINS)]
    defines = (f"#define SLAB {FILL_BLOCK}u\n#define SLABS {slabs}u\n"
               "// the byte offset of store j of step i of body<n>: its slab\n"
               "#define SLOT(n, i, j) ((((DEPTH - (n)) * UNROLL + (i)) * 8u + (j)) % SLABS "
               "* SLAB * 8u)\n" + _FOLD)
    init = [f"unsigned long long a{j} = (unsigned long long)seed * {2 * j + 1}u;"
            for j in range(CHAINS)]
    init += ["unsigned long long q = (unsigned long long)((unsigned long long *)buffer "
             "+ ((size_t)blockIdx.x * SLABS * SLAB + threadIdx.x));"]
    source = _source(name, kernel, "unsigned long long", "l", names + ["q"], steps, init,
                     f"FOLD({' ^ '.join(names + ['q'])})", depth, defines=defines)
    return Microbenchmark(
        name=name, component=level, kind="store-throughput", source=source,
        kernel_name=kernel, block=block, grid=grid, ops_per_thread=CHAINS * UNROLL * depth,
        ptx_target="st.global.u64", sass_targets=("STG.E.64",), ptx_companions=("add.s64",),
        params={"footprint_bytes": slabs * FILL_BLOCK * 8},
        buffer_words=grid * slabs * FILL_BLOCK * 2)


SHARED_SLABS = 4  # slabs of FILL_BLOCK words the shared store benchmark writes in turn


def shared_store_throughput(*, grid: int = FILL_GRID, block: int = FILL_BLOCK,
                            depth: int = DEPTH) -> Microbenchmark:
    """Every thread storing 32-bit words (st.shared.u32) to its block's SHARED_SLABS slabs
    of shared memory: store k of a thread is slab k mod SHARED_SLABS, and thread t writes
    word t of it, so a warp's 32 stores fill 32 banks (no conflict)."""
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    if block > FILL_BLOCK:
        raise ParameterError(f"block must be at most {FILL_BLOCK} threads, not {block}")
    name = "memory/store-throughput/shared"
    kernel = kernel_name_of(name)
    names = [f"a{j}" for j in range(CHAINS)]
    steps = [f'asm volatile("st.shared.u32 [%0], %1;" :: "r"(q + SLOT(N, i, {j})), '
             f'"r"(a{j}));' for j in range(CHAINS)]
    defines = (f"#define SLAB {FILL_BLOCK}u\n#define SLABS {SHARED_SLABS}u\n"
               "// the byte offset of store j of step i of body<n>: its slab\n"
               "#define SLOT(n, i, j) ((((DEPTH - (n)) * UNROLL + (i)) * 8u + (j)) % SLABS "
               "* SLAB * 4u)\n")
    prologue = "  __shared__ unsigned slabs[SLABS * SLAB];\n"
    init = [f"unsigned a{j} = seed * {2 * j + 1}u;" for j in range(CHAINS)]
    init += ["unsigned q = (unsigned)__cvta_generic_to_shared(&slabs[threadIdx.x]);"]
    # the sink reads a word back, so the stores are not dead
    source = _source(name, kernel, "unsigned", "r", names + ["q"], steps, init,
                     f"{' ^ '.join(names)} ^ q ^ slabs[(threadIdx.x + 1) % SLAB]", depth,
                     defines=defines, prologue=prologue)
    return Microbenchmark(
        name=name, component="shared", kind="store-throughput", source=source,
        kernel_name=kernel, block=block, grid=grid, ops_per_thread=CHAINS * UNROLL * depth,
        ptx_target="st.shared.u32", sass_targets=("STS",), ptx_companions=("add.s32",),
        params={"footprint_bytes": SHARED_SLABS * FILL_BLOCK * 4})


# ---------------------------------------------------------------- intensity


def _warps(warps: int) -> int:
    if warps not in range(1, INTENSITY_BLOCK // 32 + 1):
        raise ParameterError(f"warps must be 1 to {INTENSITY_BLOCK // 32}, not {warps}")
    return warps


def dram_intensity(warps: int, *, grid: int = FILL_GRID // 2,
                   depth: int = DEPTH) -> Microbenchmark:
    """F_DRAMThr's microbenchmark: *warps* of each block's 16 chase one chain each through
    the block's 2 MiB (DRAM), consecutive rows, the others idle: the bytes in flight, and
    so the bandwidth asked of DRAM, grow with warps / 16."""
    rows = INTENSITY_FOOTPRINT // (ROW * 8)
    fraction = _warps(warps) / (INTENSITY_BLOCK // 32)
    return _chase(f"dram-intensity/{fraction:g}", "dram", "dram-intensity", rows=rows,
                  stride=1, chains=1, spacing=rows // (INTENSITY_BLOCK // 32), cache="cg",
                  lead="0u", warm=False, grid=grid, block=INTENSITY_BLOCK, depth=depth,
                  active=warps)


def arith_intensity(warps: int, *, grid: int = FILL_GRID // 2,
                    depth: int = DEPTH) -> Microbenchmark:
    """F_ARITHThr's microbenchmark: *warps* of each block's 16 run the f32 add latency
    chain (one dependent add per FADD latency), the others idle."""
    if depth < 1:
        raise ParameterError(f"depth must be at least 1, not {depth}")
    op = next(o for o in OPS if (o.dtype, o.name) == ("f32", "add"))
    fraction = _warps(warps) / (INTENSITY_BLOCK // 32)
    name = f"arith-intensity/{fraction:g}"
    kernel = kernel_name_of(name)
    ctype, constraint, init = _TYPES[op.dtype]
    steps = [_step(op, constraint, j, "latency") for j in range(CHAINS)]
    inits = [f"{ctype} a{j} = {init.format(j=j)};" for j in range(CHAINS)]
    source = _source(name, kernel, ctype, constraint, [f"a{j}" for j in range(CHAINS)],
                     steps, inits, " ^ ".join(f"bits(a{j})" for j in range(CHAINS)), depth,
                     defines=f"#define ACTIVE_WARPS {warps}u\n",
                     prologue="  if ((threadIdx.x >> 5) >= ACTIVE_WARPS) return;  "
                              "// this warp idles\n")
    return Microbenchmark(
        name=name, component=op.component, kind="arith-intensity", source=source,
        kernel_name=kernel, block=INTENSITY_BLOCK, grid=grid,
        ops_per_thread=CHAINS * UNROLL * depth, ptx_target=op.ptx, sass_targets=op.sass,
        params={"fraction": fraction, "chains": 1})


def microbenchmarks(*, grid: int = FILL_GRID) -> list[Microbenchmark]:
    """Every microbenchmark with default parameters, in a fixed order: throughput of each
    op, latency of each op, shared memory by ways, divergence by fraction, memory (load
    latency, load throughput, store throughput by level), DRAM and arithmetic intensity
    by fraction. *grid* scales the launches that fill the GPU (blocks of 256 threads;
    the intensity families' blocks of 512 get grid // 2)."""
    half = max(1, grid // 2)
    return ([throughput(op, grid=grid) for op in OPS] + [latency(op) for op in OPS]
            + [shared_conflicts(w, grid=grid) for w in WAYS]
            + [divergence(n, grid=grid) for n in range(CHAINS + 1)]
            + [load_latency(level) for level in LEVELS]
            + [load_throughput(level, grid=grid) for level in LEVELS]
            + [store_throughput(level, grid=grid) for level in ("l2", "dram")]
            + [shared_store_throughput(grid=grid)]
            + [dram_intensity(w, grid=half) for w in INTENSITY_WARPS]
            + [arith_intensity(w, grid=half) for w in INTENSITY_WARPS])


# ---------------------------------------------------------------- measuring them

WARMUP, RUNS = 4, 30


def _with(stem: Path, suffix: str) -> Path:
    """*stem* + *suffix* (names hold dots: ``dram-intensity_0.25``)."""
    return Path(str(stem) + suffix)


def compile_microbenchmark(bench: Microbenchmark, folder, arch: str,
                           tools=None) -> dict:
    """Write *bench*'s source to *folder* and compile it for ``sm_<arch>`` (arch "90"):
    .cu → .ptx and .cubin (nvcc) → .sass (nvdisasm), the tools taken from the folder
    *tools* (default: PATH). Returns the record's build fields: ``stem`` (the files'
    name in *folder*, without suffix), the seconds each nvcc step took and, where a step
    failed, ``error`` (the tool and the start of its message)."""
    def tool(name):
        return str(Path(tools) / name) if tools is not None else name

    stem = Path(folder) / bench.name.replace("/", "_")
    cu = _with(stem, ".cu")
    cu.write_text(bench.source)
    out = {"stem": stem.name}
    for flag, suffix in (("-ptx", ".ptx"), ("-cubin", ".cubin")):
        start = time.monotonic()
        run = subprocess.run([tool("nvcc"), f"-arch=sm_{arch}", flag, "-o",
                              str(_with(stem, suffix)), str(cu)],
                             capture_output=True, text=True)
        out[f"{suffix[1:]}_seconds"] = round(time.monotonic() - start, 2)
        if run.returncode:
            out["error"] = f"nvcc {flag}: {run.stderr.strip()[:500]}"
            return out
    run = subprocess.run([tool("nvdisasm"), str(_with(stem, ".cubin"))],
                         capture_output=True, text=True)
    if run.returncode:
        out["error"] = f"nvdisasm: {run.stderr.strip()[:500]}"
        return out
    _with(stem, ".sass").write_text(run.stdout)
    return out


def time_microbenchmark(bench: Microbenchmark, cubin, grid: int, block: int) -> dict:
    """Launch the cubin of *bench* WARMUP + RUNS times on the current CUDA device (cupy)
    with *grid* blocks of *block* threads; the RUNS timed launches' seconds (CUDA
    events) and their blocks' clock64 cycles in the timed region."""
    import cupy
    import numpy as np

    function = cupy.RawModule(path=str(cubin)).get_function(bench.kernel_name)
    clocks = cupy.zeros(grid, dtype=cupy.int64)
    sink = cupy.zeros(grid * block, dtype=cupy.uint32)
    buffer = cupy.zeros(bench.buffer_words, dtype=cupy.uint32)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times, cycles = [], []
    for i in range(WARMUP + RUNS):
        start.record()
        function((grid,), (block,), (clocks, sink, buffer))
        stop.record()
        stop.synchronize()
        if i >= WARMUP:
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
            cycles.append(cupy.asnumpy(clocks).astype(float))
    fastest = cycles[int(np.argmin(times))]
    return {"seconds": times, "min_s": min(times), "median_s": float(np.median(times)),
            "block_cycles_median": float(np.median(fastest)),  # of the fastest run
            "block_cycles_max": float(fastest.max()),
            "block_cycles_median_per_run": [float(np.median(c)) for c in cycles]}


def device_info() -> dict:
    """The current CUDA device (cupy) as a microbenchmark document names it: its name,
    compute capability, SMs, clock, nvidia-smi's driver and clocks, the CUDA driver's
    version and the date; a KernelcastError where cupy or a CUDA device is missing."""
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
    except ImportError:
        raise KernelcastError("measuring the criteria microbenchmarks needs cupy and an "
                              "NVIDIA GPU (pip install 'kernelcast[cuda]')") from None
    except cupy.cuda.runtime.CUDARuntimeError as err:
        raise KernelcastError(f"no CUDA device to measure the criteria microbenchmarks "
                              f"on: {err}") from None
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,"
                          "clocks.sm", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip()
    return {"device": props["name"].decode(), "compute_capability":
            f"{props['major']}{props['minor']}", "sms": props["multiProcessorCount"],
            "clock_khz": props["clockRate"], "nvidia_smi": smi,
            "cuda_driver": cupy.cuda.runtime.driverGetVersion(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def measure_microbenchmarks(out, *, tools=None, progress=None, wait: float = 0.0) -> Path:
    """Compile, check and time every microbenchmark on the current CUDA device (see
    the module docstring), eight blocks per SM where they fill the GPU; write
    OUT/microbenchmarks.json and OUT/listings.tar.xz into the folder *out* (made if
    missing). *tools*: the folder of nvcc and nvdisasm (default: PATH); a line per
    microbenchmark goes to *progress* (default stdout). The device's lock is held
    throughout, as by every campaign (kernelcast.measure.lock; *wait*: seconds to wait
    for another holder). Returns the JSON's path."""
    from kernelcast.measure.devices import cuda_devices
    from kernelcast.measure.lock import DeviceLock

    info = device_info()  # no cupy, no GPU: refused before anything is written
    lock = DeviceLock(cuda_devices()[0], wait)
    try:
        return _measure(out, info, tools, progress)
    finally:
        lock.release()


def _measure(out, info: dict, tools, progress) -> Path:
    from kernelcast.facts.ptx_checks import check_ptx, check_sass

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(info), file=progress, flush=True)
    benches = microbenchmarks(grid=info["sms"] * 8)  # eight blocks per SM
    with tempfile.TemporaryDirectory(prefix="kernelcast-mb-") as temp:
        folder = Path(temp)
        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            built = list(pool.map(lambda b: compile_microbenchmark(
                b, folder, info["compute_capability"], tools), benches))
        print(f"compiled {len(benches)} in {time.monotonic() - start:.0f} s",
              file=progress, flush=True)
        records = []
        for bench, build in zip(benches, built, strict=True):
            record = {"name": bench.name, "component": bench.component, "kind": bench.kind,
                      "params": bench.params, "grid": bench.grid, "block": bench.block,
                      "ops_per_thread": bench.ops_per_thread,
                      "source_sha256": hashlib.sha256(bench.source.encode()).hexdigest(),
                      **build}
            if "error" not in build:
                stem = folder / build["stem"]
                record["ptx_problems"] = check_ptx(bench, _with(stem, ".ptx").read_text())
                record["sass_problems"] = check_sass(bench, _with(stem, ".sass").read_text())
                cubin = _with(stem, ".cubin")
                try:
                    record.update(time_microbenchmark(bench, cubin, bench.grid, bench.block))
                    if bench.kind == "bank-conflicts":  # and one warp alone: the latency
                        record["one_warp"] = time_microbenchmark(bench, cubin, 1, 32)
                except Exception as err:  # noqa: BLE001 - recorded with its status
                    record["error"] = f"run: {type(err).__name__}: {err}"[:500]
            records.append(record)
            brief = (record.get("error") or f"{record['min_s'] * 1e6:.1f} µs, "
                     f"{record['block_cycles_median']:.0f} cycles/block, checks "
                     f"{len(record['ptx_problems'])}+{len(record['sass_problems'])} problems")
            print(f"{bench.name}: {brief}", file=progress, flush=True)
        path = out / "microbenchmarks.json"
        path.write_text(json.dumps({**info, "warmup": WARMUP, "runs": RUNS,
                                    "records": records}, indent=1) + "\n")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:xz") as tar:
            for listing in sorted(folder.iterdir()):
                if listing.name.endswith((".cu", ".ptx", ".sass")):
                    tar.add(listing, arcname=listing.name)
        (out / "listings.tar.xz").write_bytes(buf.getvalue())
    return path
