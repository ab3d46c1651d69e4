"""The fine-grained model's microbenchmarks (shared/seeds 003, §III): CUDA C++ kernels with
inline PTX, one per functional component and intensity, written so that the PTX and SASS
checks of kernelcast.models.criteria.checks can verify P1 (stressing), P3 (selectivity)
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

Public names: Microbenchmark, Op, OPS, SM_COUNT, FILL_GRID, FILL_BLOCK, DEPTH, UNROLL,
CHAINS, WAYS, TABLE_WORDS, arithmetic, throughput, latency, shared_conflicts,
microbenchmarks, kernel_name_of.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelcast.errors import ParameterError

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
    its PTX and SASS must show (checked by kernelcast.models.criteria.checks).
    *sass_companions* / *ptx_companions*: instructions the target's realization needs
    beside it (MUFU.SIN's FMUL.RZ range reduction, set's SEL; rcp's guard setp in PTX);
    the selectivity check does not count them as other work."""

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
    """A benchmark name as a C identifier: 'throughput/int/add' -> 'throughput_int_add'."""
    return name.replace("/", "_").replace("-", "_")


def _source(name: str, kernel: str, ctype: str, constraint: str, names: list[str],
            steps: list[str], init: list[str], sink: str, depth: int, defines: str = "",
            prologue: str = "") -> str:
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
#define UNROLL {UNROLL}
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


def microbenchmarks(*, grid: int = FILL_GRID) -> list[Microbenchmark]:
    """Every microbenchmark with default parameters, in a fixed order: throughput of each
    op, latency of each op, then shared memory by ways. *grid* scales the launches that
    fill the GPU (throughput and shared)."""
    return ([throughput(op, grid=grid) for op in OPS] + [latency(op) for op in OPS]
            + [shared_conflicts(w, grid=grid) for w in WAYS])
