"""The fine-grained model's microbenchmarks (kernelcast.suites.criteria_microbenchmarks)
and the checks of their compiled forms (kernelcast.facts.ptx_checks): their sources,
checked without a compiler (address patterns and branch conditions evaluated from the
sources' own macros), and the PTX/SASS checks, run on hand-written snippets in nvcc's PTX
and nvdisasm's (or cuobjdump's) SASS syntax."""

import dataclasses
import re

import pytest

from kernelcast.errors import ParameterError
from kernelcast.facts.ptx_checks import (
    check_ptx,
    check_sass,
    parse_ptx,
    parse_sass,
    ptx_functions,
    sass_functions,
)
from kernelcast.suites.criteria_microbenchmarks import (
    FILL_GRID,
    FOOTPRINT,
    INTENSITY_WARPS,
    LEVELS,
    OPS,
    SIDE,
    WAYS,
    arith_intensity,
    divergence,
    dram_intensity,
    kernel_name_of,
    latency,
    load_latency,
    load_throughput,
    microbenchmarks,
    shared_conflicts,
    shared_store_throughput,
    store_throughput,
    throughput,
)

ALL = microbenchmarks()


def _op(dtype, name):
    return next(o for o in OPS if o.dtype == dtype and o.name == name)


# ------------------------------------------------------------------ sources


def test_names_are_unique_and_deterministic():
    names = [b.name for b in ALL]
    # the families the module documents, in its order, written out: 12 ops (int add,
    # mul, compare, and, or, xor; f32 add, mul, sin, rcp; f64 add, mul) x throughput and
    # latency, 6 ways, d = 0, 1/8, ..., 1 (9), load latency and throughput at 3 levels,
    # stores at L2, DRAM and shared (3), 1, 2, 3, 4, 6, 8, 12 or 16 warps of 16 x 2
    # intensities: 24 + 6 + 9 + 6 + 3 + 16 = 64
    ops = [("int", o) for o in ("add", "mul", "compare", "and", "or", "xor")] + [
        ("f32", o) for o in ("add", "mul", "sin", "rcp")] + [("f64", "add"), ("f64", "mul")]
    fractions = ["0.0625", "0.125", "0.1875", "0.25", "0.375", "0.5", "0.75", "1"]
    expected = ([f"throughput/{t}/{o}" for t, o in ops]
                + [f"latency/{t}/{o}" for t, o in ops]
                + [f"shared/conflicts-{w}" for w in (1, 2, 4, 8, 16, 32)]
                + ["divergence/d-" + d for d in ("0", "0.125", "0.25", "0.375", "0.5",
                                                  "0.625", "0.75", "0.875", "1")]
                + [f"memory/load-{k}/{level}" for k in ("latency", "throughput")
                   for level in ("l1", "l2", "dram")]
                + [f"memory/store-throughput/{level}" for level in ("l2", "dram", "shared")]
                + [f"{k}-intensity/{f}" for k in ("dram", "arith") for f in fractions])
    assert names == expected and len(set(names)) == len(names) == 64
    # the first slice's 30, measured on the H100, come first and in their order
    assert [b.kind for b in ALL[:30]] == ["throughput"] * 12 + ["latency"] * 12 + [
        "bank-conflicts"] * 6
    assert names == [b.name for b in microbenchmarks()]
    assert [b.source for b in ALL] == [b.source for b in microbenchmarks()]
    assert len({b.kernel_name for b in ALL}) == len(ALL)
    assert kernel_name_of("divergence/d-0.375") == "divergence_d_0_375"


def test_families_and_launches():
    kinds = {b.kind for b in ALL}
    assert kinds == {"throughput", "latency", "bank-conflicts", "divergence", "load-latency",
                     "load-throughput", "store-throughput", "dram-intensity",
                     "arith-intensity"}
    assert {b.component for b in ALL} == {"int", "f32", "f32-special", "f64", "shared",
                                          "divergence", "l1", "l2", "dram"}
    for b in ALL:
        if b.kind in ("latency", "load-latency"):
            assert (b.grid, b.block) == (1, 32)
        elif b.kind in ("dram-intensity", "arith-intensity"):
            assert (b.grid, b.block) == (FILL_GRID // 2, 512)  # 2048 threads per SM
        else:
            assert (b.grid, b.block) == (FILL_GRID, 256)
    assert throughput(OPS[0], grid=7).grid == 7
    grids = [(b.kind, b.grid) for b in microbenchmarks(grid=6) if "latency" not in b.kind]
    assert len(grids) == 18 + 9 + 6 + 16
    assert {g for k, g in grids if "intensity" not in k} == {6}
    assert {g for k, g in grids if "intensity" in k} == {3}
    assert [b.params["ways"] for b in ALL if b.kind == "bank-conflicts"] == list(WAYS)
    assert [b.params["divergent_fraction"] for b in ALL if b.kind == "divergence"] == [
        n / 8 for n in range(9)]
    for kind in ("dram-intensity", "arith-intensity"):
        assert [b.params["fraction"] for b in ALL if b.kind == kind] == [
            w / 16 for w in INTENSITY_WARPS]


@pytest.mark.parametrize("bench", ALL, ids=lambda b: b.name)
def test_source_shape(bench):
    src = bench.source
    assert (f'extern "C" __global__ void {bench.kernel_name}(long long *clocks, '
            "unsigned *sink, unsigned *buffer)") in src
    assert "asm volatile(" in src
    # two clock64() reads around the recursion; thread 0 stores, every thread sinks
    assert re.search(r"start = clock64\(\);\n  body<DEPTH>\(.*\);\n  long long end = "
                     r"clock64\(\);", src)
    assert "if (threadIdx.x == 0) clocks[blockIdx.x] = end - start;" in src
    sink = re.search(r"sink\[blockIdx\.x \* blockDim\.x \+ threadIdx\.x\] = (.*);", src)
    registers = re.findall(r"&(\w+)", re.search(r"void body\((.*)\)", src).group(1))
    assert sink and all(r in sink.group(1) for r in registers)
    # inputs are dynamic: every register starts from the clock-based seed or threadIdx
    assert "(unsigned)clock() ^ (threadIdx.x" in src
    for r in registers:
        init = re.search(rf"\n  [\w ]+ {r} = (.*);", src).group(1)
        assert "seed" in init or "threadIdx" in init, init
    # no constant goes into an asm statement: every operand is a named register (a
    # store's address: a register plus its compile-time SLOT offset)
    for operand in re.findall(r'"[=+]?[rfdl]"\(((?:[^()]|\([^()]*\))*)\)', src):
        assert re.fullmatch(r"[A-Za-z_]\w*( \+ SLOT\(N, i, \d\))?", operand), operand
    if bench.buffer_words != 1 << 20:  # the memory kernels address the buffer
        assert re.search(r"buffer\s*\+", src) and "(void)buffer;" in src


def _loop(src):
    """The text of the #pragma unroll loop: one step of the sequence."""
    return src.split("for (int i = 0; i < UNROLL; ++i) {")[1].split("\n  }\n")[0]


def _expanded_count(src, target, branches=False):
    """Target asm statements (*branches*: if statements) the template recursion expands
    to: the statements in one unrolled step times UNROLL (the #pragma unroll trip count)
    times DEPTH (levels of body<N> down to the empty body<0>), all read from the source."""
    depth = int(re.search(r"#define DEPTH (\d+)", src).group(1))
    unroll = int(re.search(r"#define UNROLL (\d+)", src).group(1))
    assert "#pragma unroll\n  for (int i = 0; i < UNROLL; ++i) {" in src
    assert "body<N - 1>(" in src and "void body<0>(" in src and "body<DEPTH>(" in src
    lines = [s.strip() for s in _loop(src).split("\n")]
    if branches:
        return sum(s.startswith("if (") for s in lines) * unroll * depth
    statements = [s for s in lines if s.startswith("asm volatile")]
    assert all(f'"{target} ' in s or f" {target} %" in s for s in statements)
    return len(statements) * unroll * depth


@pytest.mark.parametrize("bench", ALL, ids=lambda b: b.name)
def test_unrolled_expansion_matches_ops_per_thread(bench):
    branches = bench.count == "branches"
    assert _expanded_count(bench.source, bench.ptx_target, branches) == bench.ops_per_thread
    depth = int(re.search(r"#define DEPTH (\d+)", bench.source).group(1))
    deeper = bench.source.replace(f"#define DEPTH {depth}\n", "#define DEPTH 3\n")
    assert _expanded_count(deeper, bench.ptx_target, branches) == \
        bench.ops_per_thread * 3 // depth


def test_depth_scales_the_sequence():
    assert latency(OPS[0], depth=2).ops_per_thread == 2 * 8 * 64
    assert "#define DEPTH 2" in latency(OPS[0], depth=2).source
    with pytest.raises(ParameterError):
        latency(OPS[0], depth=0)


def test_dependences_of_throughput_and_latency():
    """Throughput: step j reads a_j and a_{j+1} (independent within a step); latency:
    step j reads a_{j-1}, the previous statement's result (one chain)."""
    tp = throughput(_op("int", "add")).source
    assert 'asm volatile("add.s32 %0, %0, %1;" : "+r"(a0) : "r"(a1));' in tp
    assert 'asm volatile("add.s32 %0, %0, %1;" : "+r"(a7) : "r"(a0));' in tp
    lat = latency(_op("int", "add")).source
    steps = re.findall(r'"\+r"\(a(\d)\) : "r"\(a(\d)\)', lat)
    assert steps[:8] == [(str(j), str((j - 1) % 8)) for j in range(8)]
    sin = latency(_op("f32", "sin")).source
    assert 'asm volatile("sin.approx.ftz.f32 %0, %1;" : "=f"(a1) : "f"(a0));' in sin
    xor = throughput(_op("int", "xor"))
    assert xor.params["lut"] == 0x96 and "0x96;" in xor.source
    rcp = throughput(_op("f32", "rcp"))
    assert rcp.ptx_companions == ("setp.ne.u32",) and "@p rcp.approx.ftz.f32" in rcp.source


def _lane_words(src):
    """The word each of the 32 lanes starts from, by evaluating the source's WORD macro."""
    defines = dict(re.findall(r"#define (WAYS|TABLE_WORDS) (\d+)", src))
    expr = re.search(r"#define WORD\(lane\) (.*)", src).group(1)
    for name, value in defines.items():
        expr = expr.replace(name, value)
    assert re.fullmatch(r"[()\d\s*%+lane]+", expr), expr
    return [eval(expr, {"__builtins__": {}}, {"lane": lane}) for lane in range(32)]


@pytest.mark.parametrize("ways", WAYS)
def test_bank_conflicts_put_ways_lanes_on_a_bank(ways):
    bench = shared_conflicts(ways)
    assert "&table[WORD(threadIdx.x & 31u)]" in bench.source
    words = _lane_words(bench.source)
    assert len(set(words)) == 32  # distinct words: conflicts, not broadcasts
    assert max(words) < int(re.search(r"#define TABLE_WORDS (\d+)", bench.source).group(1))
    per_bank = {}
    for w in words:  # 32 banks of 4-byte words
        per_bank[w * 4 // 4 % 32] = per_bank.get(w * 4 // 4 % 32, 0) + 1
    assert set(per_bank.values()) == {ways} and len(per_bank) == 32 // ways
    assert bench.params == {"ways": ways} and bench.sass_targets == ("LDS",)


def test_bad_ways_are_refused():
    for ways in (0, 3, 64):
        with pytest.raises(ParameterError):
            shared_conflicts(ways)


def _macro(src, name, *free):
    """The source's function-like macro *name* as a Python function (unsigned 32-bit
    arithmetic), its object-like macros substituted; *free*: the variables it reads,
    passed as further arguments."""
    values = dict(re.findall(r"#define ([A-Z_]+) (\d+)u?\n", src))
    params, body = re.search(rf"#define {name}\(([^)]*)\) (.*)", src).groups()
    for key, value in values.items():
        body = re.sub(rf"\b{key}\b", value, body)
    body = re.sub(r"\b(\d+)u\b", r"\1", body)
    assert re.fullmatch(r"[()\d\s*%+\->&a-z,]+", body), body
    args = ", ".join([params, *free])
    return eval(f"lambda {args}: ({body}) & 0xFFFFFFFF", {"__builtins__": {}})


def _define(src, name):
    return int(re.search(rf"#define {name} (\d+)u?\n", src).group(1))


def test_divergent_fraction_is_what_the_lanes_give():
    """Each if's value over the lanes of a block, from the source's DIVERGENT / UNIFORM:
    a divergent one splits every warp 16/16, a uniform one is the same within each warp
    (and both sides run in the block); the divergent share of the ifs is the fraction."""
    for n in range(9):
        bench = divergence(n)
        src = bench.source
        value = {"d": _macro(src, "DIVERGENT"), "u": _macro(src, "UNIFORM")}
        assert "unsigned d = DIVERGENT(threadIdx.x);" in src
        assert "unsigned u = UNIFORM(threadIdx.x);" in src
        conditions = re.findall(r"\n    if \(([du])\) \{", _loop(src))
        assert len(conditions) == 8
        divergent = 0
        for c in conditions:
            warps = [[value[c](t) for t in range(w * 32, w * 32 + 32)]
                     for w in range(bench.block // 32)]
            if all(sorted(lanes) == [0] * 16 + [1] * 16 for lanes in warps):
                divergent += 1
            else:
                assert all(len(set(lanes)) == 1 for lanes in warps), c
                assert {lanes[0] for lanes in warps} == {0, 1}
        assert divergent / 8 == bench.params["divergent_fraction"] == n / 8
        assert bench.name == f"divergence/d-{n / 8:g}"


def test_divergence_sides_and_pins():
    """Each if is preceded by an empty asm volatile on its value (NVVM merges consecutive
    ifs on one value otherwise), and each side is SIDE adds with its own operands."""
    loop = _loop(divergence(3).source)
    statements = loop.split('asm volatile("" : "+r"(')[1:]
    assert len(statements) == 8
    for text in statements:
        c = text[0]
        assert text.startswith(f'{c}));') and f"if ({c}) {{" in text
        then, other = text.split("} else {")
        adds = [re.findall(r'\(a(\d)\) : "r"\(a(\d)\)', side) for side in (then, other)]
        assert [len(a) for a in adds] == [SIDE, SIDE] and adds[0] != adds[1]
    bench = divergence(3)
    assert (bench.ptx_target, bench.sass_targets, bench.count) == ("bra", ("BRA",), "branches")
    assert bench.ops_per_thread == 128


def _chase(bench, lead=0):
    """Every chain of *bench* followed through the ops_per_thread loads of a thread, from
    the source's START and NEXT: {(warp, chain): [row of each load]}, checking that a
    warp's first and last lanes stay in one row (coalesced) inside the region."""
    src = bench.source
    start, nxt = _macro(src, "START", "lead"), _macro(src, "NEXT")
    rows, chains = _define(src, "ROWS"), _define(src, "CHAINS")
    warps = _define(src, "ACTIVE_WARPS") if "ACTIVE_WARPS" in src else bench.block // 32
    out = {}
    for w in range(warps):
        for c in range(chains):
            e = [start(w, c, lead) * 32 + lane for lane in (0, 31)]
            visited = []
            for _ in range(bench.ops_per_thread // chains):
                e = [nxt(x) for x in e]
                assert all(0 <= x < rows * 32 for x in e)
                assert [x % 32 for x in e] == [0, 31] and e[0] // 32 == e[1] // 32
                visited.append(e[0] // 32)
            out[w, c] = visited
    return out


@pytest.mark.parametrize("level", LEVELS)
def test_latency_chase_visits_its_footprint(level):
    bench = load_latency(level)
    rows = _define(bench.source, "ROWS")
    assert rows * 256 == FOOTPRINT["latency", level] == bench.params["footprint_bytes"]
    assert bench.buffer_words == rows * 64 and f"ld.global.{'ca' if level == 'l1' else 'cg'}" \
        ".u64 %0, [%0];" in bench.source
    assert "__shfl_sync(0xffffffffu, seed, 0)" in bench.source  # one start row per warp
    for lead in (0, 12345, 2**31 + 7):
        visited = _chase(bench, lead)[0, 0]
        assert len(set(visited)) == min(len(visited), rows)  # no row twice before all
        gaps = [b - a for a, b in zip(sorted(set(visited)), sorted(set(visited))[1:])]
        assert max(gaps) <= bench.params["stride_rows"]  # spread over the whole footprint
        assert max(visited) - min(visited) >= rows - bench.params["stride_rows"] - 1
    # two launches (two clock values) chase different DRAM rows: L2 holds no start
    if level == "dram":
        assert not set(_chase(bench, 0)[0, 0]) & set(_chase(bench, 999_999)[0, 0])


@pytest.mark.parametrize("level", LEVELS)
def test_throughput_chase_covers_its_region(level):
    bench = load_throughput(level)
    rows = _define(bench.source, "ROWS")
    assert rows * 256 == FOOTPRINT["throughput", level]
    assert bench.buffer_words == bench.grid * rows * 64  # a region per block
    assert "(size_t)blockIdx.x * ROWS * 32u" in bench.source
    chains = _chase(bench)
    assert len(chains) == 64
    when = {}
    for visited in chains.values():
        for step, row in enumerate(visited):
            when.setdefault(row, []).append(step)
    assert set(when) == set(range(rows))  # the whole region
    assert len({len(s) for s in when.values()}) == 1  # every row equally often
    if level == "dram":  # a row is read again 64 steps later: after 64 loads of every thread
        assert min(b - a for s in when.values() for a, b in zip(sorted(s), sorted(s)[1:])) \
            == rows // 64
    else:  # the L1 pass: ROWS loads bring a chain back to its start, through every row
        nxt, start = _macro(bench.source, "NEXT"), _macro(bench.source, "START", "lead")
        e = start(0, 0, 0) * 32
        seen = set()
        for _ in range(rows):
            e = nxt(e)
            seen.add(e // 32)
        assert e == start(0, 0, 0) * 32 and len(seen) == rows
        assert ("for (unsigned k = 0; k < ROWS; ++k)" in bench.source) == (level == "l1")


def test_initialisation_writes_the_chain_once():
    src = load_throughput("dram").source
    assert "region[e] = (unsigned long long)&region[NEXT(e)];" in src
    assert "if (__syncthreads_or(region[ROWS * 32u - 1u] !=" in src
    assert src.index("__syncthreads();") < src.index("long long start = clock64();")


@pytest.mark.parametrize("warps", INTENSITY_WARPS)
def test_dram_intensity_chains(warps):
    bench = dram_intensity(warps)
    assert bench.params["fraction"] == warps / 16 and bench.block == 512
    assert f"#define ACTIVE_WARPS {warps}u" in bench.source
    assert "if ((threadIdx.x >> 5) >= ACTIVE_WARPS) return;" in bench.source
    rows = _define(bench.source, "ROWS")
    assert bench.buffer_words == bench.grid * rows * 64 and rows * 256 == 2 << 20
    chains = _chase(bench)
    assert len(chains) == warps
    when = {}
    for visited in chains.values():
        assert len(set(visited)) == len(visited) == 4096  # a warp never rereads a row
        for step, row in enumerate(visited):
            when.setdefault(row, []).append(step)
    assert min((b - a for s in when.values() for a, b in zip(sorted(s), sorted(s)[1:])),
               default=rows) >= rows // 16


def test_arith_intensity():
    bench = arith_intensity(3)
    assert bench.params == {"fraction": 3 / 16, "chains": 1}
    assert "if ((threadIdx.x >> 5) >= ACTIVE_WARPS) return;" in bench.source
    steps = re.findall(r'"=f"\(a(\d)\) : "f"\(a(\d)\)|"\+f"\(a(\d)\) : "f"\(a(\d)\)',
                       _loop(bench.source))
    assert [tuple(x for x in s if x) for s in steps] == [
        (str(j), str((j - 1) % 8)) for j in range(8)]  # one dependent chain
    assert bench.sass_targets == ("FADD",) and bench.ops_per_thread == 4096


@pytest.mark.parametrize("level", ("l2", "dram"))
def test_stores_cover_their_footprint(level):
    """Store k of a thread goes to slab k mod SLABS (SLOT, from the source), thread t to
    word t of the slab: a block writes its region slab after slab, all slabs equally."""
    bench = store_throughput(level)
    src = bench.source
    slot, slabs = _macro(src, "SLOT"), _define(src, "SLABS")
    depth, unroll = _define(src, "DEPTH"), _define(src, "UNROLL")
    assert slabs * 256 * 8 == FOOTPRINT["throughput", level] == bench.params["footprint_bytes"]
    assert bench.buffer_words == bench.grid * slabs * 256 * 2
    offsets = [slot(n, i, j) for n in range(depth, 0, -1) for i in range(unroll)
               for j in range(8)]
    assert len(offsets) == bench.ops_per_thread
    assert offsets == [k % slabs * 2048 for k in range(len(offsets))]
    assert "buffer + ((size_t)blockIdx.x * SLABS * SLAB + threadIdx.x)" in src
    assert bench.ptx_companions == ("add.s64",) and bench.sass_targets == ("STG.E.64",)


def test_shared_stores_are_conflict_free_and_cover_their_slabs():
    """Store k of a thread goes to slab k mod SLABS of 256 words, thread t to word t: a
    warp's 32 stores are 32 consecutive words, one per bank."""
    bench = shared_store_throughput()
    src = bench.source
    slot, slabs = _macro(src, "SLOT"), _define(src, "SLABS")
    depth, unroll = _define(src, "DEPTH"), _define(src, "UNROLL")
    assert slabs * 256 * 4 == bench.params["footprint_bytes"]
    offsets = [slot(n, i, j) for n in range(depth, 0, -1) for i in range(unroll)
               for j in range(8)]
    assert len(offsets) == bench.ops_per_thread == 4096
    assert offsets == [k % slabs * 1024 for k in range(len(offsets))]
    assert "__cvta_generic_to_shared(&slabs[threadIdx.x])" in src
    assert bench.ptx_target == "st.shared.u32" and bench.sass_targets == ("STS",)
    with pytest.raises(ParameterError):
        shared_store_throughput(block=512)


def test_bad_parameters_of_the_new_families_are_refused():
    for call in (lambda: divergence(9), lambda: divergence(-1), lambda: divergence(2, depth=0),
                 lambda: load_latency("l3"), lambda: load_throughput("shared"),
                 lambda: store_throughput("l1"), lambda: dram_intensity(0),
                 lambda: dram_intensity(17), lambda: arith_intensity(0),
                 lambda: load_latency("l1", depth=0)):
        with pytest.raises(ParameterError):
            call()


# ------------------------------------------------------------------ checks

SMALL = 8  # ops_per_thread of the hand-written snippets
ADD = dataclasses.replace(throughput(_op("int", "add")), ops_per_thread=SMALL)
SIN = dataclasses.replace(latency(_op("f32", "sin")), ops_per_thread=SMALL)
FADD = dataclasses.replace(throughput(_op("f32", "add")), ops_per_thread=48)


def _ptx(name, timed, seed=True, end=True):
    """A PTX module as nvcc -ptx writes it, with *timed* between the clock reads."""
    seed_lines = ("\t// begin inline asm\n\tmov.u64 \t%rd5, %clock64;\n\t// end inline asm\n"
                  "\tcvt.u32.u64 \t%r40, %rd5;\n\tmov.u32 \t%r1, %tid.x;\n"
                  "\txor.b32  \t%r26, %r40, %r1;\n") if seed else "\tmov.u32 \t%r26, 7;\n"
    end_lines = ("\t// begin inline asm\n\tmov.u64 \t%rd7, %clock64;\n\t// end inline asm\n"
                 if end else "")
    return f"""//
// Generated by NVIDIA NVVM Compiler
//
.version 9.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0);

\t// .globl\t{name}

.visible .entry {name}(
\t.param .u64 {name}_param_0,
\t.param .u64 {name}_param_1,
\t.param .u64 {name}_param_2
)
{{
\t.reg .pred \t%p<2>;
\t.reg .b32 \t%r<50>;
\t.reg .b64 \t%rd<17>;

{seed_lines}\t// begin inline asm
\tmov.u64 \t%rd6, %clock64;
\t// end inline asm
{timed}{end_lines}\tsetp.eq.s32 \t%p1, %r1, 0;
\t@%p1 bra \t$L__BB0_1;
$L__BB0_1:
\tsub.s64 \t%rd11, %rd7, %rd6;
\tret;

}}
"""


def _ptx_adds(n, start=0):
    return "".join(f"\t// begin inline asm\n\tadd.s32 %r{26 + (k % 8)}, %r{26 + (k % 8)}, "
                   f"%r{26 + ((k + 1) % 8)};\n\t// end inline asm\n"
                   for k in range(start, start + n))


def test_ptx_functions_skip_prototypes():
    funcs = ptx_functions(_ptx("throughput_int_add", _ptx_adds(SMALL)))
    assert list(funcs) == ["throughput_int_add"]
    assert "add.s32" in funcs["throughput_int_add"]


def test_check_ptx_passes():
    assert check_ptx(ADD, _ptx("throughput_int_add", _ptx_adds(SMALL))) == []


def test_check_ptx_kernel_missing():
    problems = check_ptx(ADD, _ptx("other_kernel", _ptx_adds(SMALL)))
    assert len(problems) == 1 and "not in the PTX" in problems[0]


def test_check_ptx_short_count():
    problems = check_ptx(ADD, _ptx("throughput_int_add", _ptx_adds(SMALL - 3)))
    assert problems == ["PTX: only 5 add.s32 in the timed region, fewer than the 8 the "
                        "benchmark executes (folded, eliminated or moved out of the region, "
                        "or a clock read is missing)"]


def test_check_ptx_backward_branch():
    loop = ("\tmov.u32 \t%r45, 0;\n$L__BB0_3:\n" + _ptx_adds(SMALL)
            + "\tsetp.ne.s32 \t%p1, %r45, 512;\n\t@%p1 bra \t$L__BB0_3;\n")
    problems = check_ptx(dataclasses.replace(ADD, ops_per_thread=SMALL),
                         _ptx("throughput_int_add", loop))
    assert any("backward branch" in p and "(P1)" in p for p in problems), problems


def test_check_ptx_clock_missing():
    problems = check_ptx(ADD, _ptx("throughput_int_add", _ptx_adds(SMALL), end=False))
    assert len(problems) == 1 and "clock read is missing" in problems[0]


def test_check_ptx_constant_inputs():
    problems = check_ptx(ADD, _ptx("throughput_int_add", _ptx_adds(SMALL), seed=False))
    assert len(problems) == 1 and "no dynamic input" in problems[0]


def test_check_ptx_other_arithmetic_dominates():
    timed = "".join(_ptx_adds(1, k) + f"\tmul.lo.s32 \t%r{41 + k % 4}, %r26, %r27;\n"
                    for k in range(SMALL))
    problems = check_ptx(ADD, _ptx("throughput_int_add", timed))
    assert len(problems) == 1 and "other instructions" in problems[0]
    assert "P3" in problems[0] and "mul.lo.s32 x8" in problems[0]


def test_check_ptx_companions_are_not_other_work():
    rcp = dataclasses.replace(throughput(_op("f32", "rcp")), ops_per_thread=2)
    guarded = ("\t// begin inline asm\n\t{ .reg .pred p; setp.ne.u32 p, %r26, 0x5A5A5A5A; "
               "@p rcp.approx.ftz.f32 %f1, %f1; }\n\t// end inline asm\n") * 2
    assert check_ptx(rcp, _ptx("throughput_f32_rcp", guarded)) == []


NVDISASM_HEAD = """\
\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"
\t.elftype\t@"ET_EXEC"

//--------------------- .nv.info.{name}        --------------------------
\t.section\t.nv.info.{name},"",@"SHT_CUDA_INFO"
        /*0048*/ \t.word\t.L_x_1@srel

//--------------------- .text.{name}           --------------------------
\t.section\t.text.{name},"ax",@progbits
\t.align\t128
        .global         {name}
        .type           {name},@function
        .size           {name},(.L_x_2 - {name})
        .other          {name},@"STO_CUDA_ENTRY STV_DEFAULT"
{name}:
.text.{name}:
"""
NVDISASM_TAIL = """\
//--------------------- .nv.shared.reserved.0     --------------------------
\t.section\t.nv.shared.reserved.0,"aw",@nobits
"""


def _sass(name, lines, seed=True, end=True):
    """nvdisasm's text of one kernel: prologue (seed read), start read, *lines* (opcode
    and operands, without address), end read, epilogue with the trailing self-loop."""
    pro = ["LDC R1, c[0x0][0x28]", "ULDC.64 UR4, c[0x0][0x208]"]
    if seed:
        pro += ["CS2R.32 R3, SR_CLOCKLO", "S2R R0, SR_TID.X",
                "LOP3.LUT R4, R0, R3, RZ, 0x3c, !PT"]
    else:
        pro += ["MOV R4, 0x7"]
    body = pro + ["CS2R R2, SR_CLOCKLO"] + lines
    body += ["CS2R R8, SR_CLOCKLO"] if end else []
    body += ["IADD3 R8, P0, -R2, R8, RZ", "STG.E.64 desc[UR4][R6.64], R8", "EXIT"]
    out, address = [], 0
    for line in body:
        if line.endswith(":"):
            out.append(line)
            continue
        pred = ""
        if line.startswith("@"):
            pred, line = line.split(" ", 1)
        out.append(f"        /*{address:04x}*/               {pred:>4} {line} ;")
        address += 0x10
    out += [".L_x_0:", f"        /*{address:04x}*/                   BRA `(.L_x_0);",
            f"        /*{address + 0x10:04x}*/                   NOP;", ".L_x_2:"]
    return NVDISASM_HEAD.format(name=name) + "\n".join(out) + "\n\n" + NVDISASM_TAIL


def _sass_adds(n):
    forms = ["IMAD.IADD R{a}, R{a}, 0x1, R{b}", "IADD3 R{a}, R{a}, R{b}, RZ"]
    return [forms[k % 2].format(a=4 + k % 8, b=4 + (k + 1) % 8) for k in range(n)]


def test_sass_functions_nvdisasm():
    funcs = sass_functions(_sass("throughput_int_add", _sass_adds(SMALL)))
    assert list(funcs) == ["throughput_int_add"]
    assert "IMAD.IADD" in funcs["throughput_int_add"]


def test_check_sass_passes():
    assert check_sass(ADD, _sass("throughput_int_add", _sass_adds(SMALL))) == []


def test_check_sass_companions_and_predicates():
    lines = []
    for k in range(SMALL):
        lines += [f"FMUL.RZ R{5 + k % 8}, R{4 + k % 8}, 0.15915493667125701904",
                  f"MUFU.SIN R{4 + (k + 1) % 8}, R{5 + k % 8}"]
    assert check_sass(SIN, _sass("latency_f32_sin", lines)) == []
    # the guard's one ISETP is other work, within 5% of 32 targets
    rcp = dataclasses.replace(latency(_op("f32", "rcp")), ops_per_thread=32)
    guarded = ["ISETP.NE.U32.AND P0, PT, R3, 0x5a5a5a5a, PT"] + [
        f"@P0 MUFU.RCP R{10 + (k + 1) % 8}, R{10 + k % 8}" for k in range(32)]
    assert check_sass(rcp, _sass("latency_f32_rcp", guarded)) == []


def test_check_sass_kernel_missing():
    problems = check_sass(ADD, _sass("throughput_int_mul", _sass_adds(SMALL)))
    assert len(problems) == 1 and "not in the SASS" in problems[0]
    assert "throughput_int_mul" in problems[0]


def test_check_sass_short_count():
    problems = check_sass(ADD, _sass("throughput_int_add", _sass_adds(SMALL // 2)))
    assert problems == ["SASS: only 4 IADD3/IMAD.IADD/VIADD in the timed region, fewer than "
                        "the 8 the benchmark executes (folded, eliminated or moved out of the "
                        "region, or a clock read is missing)"]


def test_check_sass_targets_before_the_start_read_do_not_count():
    text = _sass("throughput_int_add", _sass_adds(SMALL))
    hoisted = text.replace("CS2R R2, SR_CLOCKLO ;", "NOP ;").replace(
        "IADD3 R9, R9, R10, RZ ;", "CS2R R2, SR_CLOCKLO ;")
    problems = check_sass(ADD, hoisted)
    assert len(problems) == 1 and "only 2 IADD3" in problems[0]


def test_check_sass_backward_branch():
    adds = [f"FADD R{4 + k % 8}, R{4 + k % 8}, R{4 + (k + 1) % 8}" for k in range(48)]
    loop = (["MOV R12, RZ", ".L_x_3:"] + adds
            + ["ISETP.NE.AND P0, PT, R12, 0x200, PT", "@P0 BRA `(.L_x_3)"])
    problems = check_sass(FADD, _sass("throughput_f32_add", loop))
    assert len(problems) == 1 and "backward branch at /*" in problems[0]
    assert "inside the timed region" in problems[0] and "(P1)" in problems[0]


def test_check_sass_forward_branch_is_allowed():
    lines = ["@!P1 BRA `(.L_x_4)"] + _sass_adds(SMALL) + [".L_x_4:"]
    assert check_sass(ADD, _sass("throughput_int_add", lines)) == []


def test_check_sass_clock_missing():
    problems = check_sass(ADD, _sass("throughput_int_add", _sass_adds(SMALL), end=False))
    assert problems == ["SASS: only 0 IADD3/IMAD.IADD/VIADD in the timed region, fewer than "
                        "the 8 the benchmark executes (folded, eliminated or moved out of the "
                        "region, or a clock read is missing)"]
    none = _sass("throughput_int_add", _sass_adds(SMALL), seed=False, end=False)
    assert check_sass(ADD, none) == [
        "SASS: 1 clock read(s) in throughput_int_add; the timed region needs one before "
        "and one after (the clock read is missing)"]


def test_check_sass_constant_inputs():
    problems = check_sass(ADD, _sass("throughput_int_add", _sass_adds(SMALL), seed=False))
    assert len(problems) == 1 and "no dynamic input" in problems[0]


def test_check_sass_other_arithmetic_dominates():
    lines = []
    for k, add in enumerate(_sass_adds(SMALL)):
        lines += [add, f"LOP3.LUT R{12 + k % 4}, R4, R5, RZ, 0x3c, !PT"]
    problems = check_sass(ADD, _sass("throughput_int_add", lines))
    assert len(problems) == 1 and "8 other instructions" in problems[0]
    assert "P3 selectivity" in problems[0] and "LOP3.LUT x8" in problems[0]


def test_check_sass_register_moves_are_not_multiplies():
    mul = dataclasses.replace(throughput(_op("int", "mul")), ops_per_thread=SMALL)
    lines = [f"IMAD.MOV.U32 R{4 + k}, RZ, RZ, R{12 + k}" for k in range(SMALL)]
    problems = check_sass(mul, _sass("throughput_int_mul", lines))
    assert any("only 0 IMAD/IMUL" in p for p in problems), problems
    lines = [f"IMAD R{4 + k % 8}, R{4 + k % 8}, R{4 + (k + 1) % 8}, RZ" for k in range(SMALL)]
    assert check_sass(mul, _sass("throughput_int_mul", lines)) == []


def test_check_sass_split_64_bit_read():
    """A clock64() read printed as two S2UR (LO, HI) is one read."""
    text = _sass("throughput_int_add", _sass_adds(SMALL)).replace(
        "CS2R R8, SR_CLOCKLO ;", "S2UR UR8, SR_CLOCKLO ;\n        /*0fff*/   "
        "                S2UR UR9, SR_CLOCKHI ;")
    assert check_sass(ADD, text) == []


def test_cuobjdump_format():
    """cuobjdump -sass: 'Function : NAME', encodings in trailing comments, BRA to an
    address."""
    lines = ["\tcode for sm_90", "\t\tFunction : latency_f32_sin",
             '\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"']
    body = (["S2R R0, SR_TID.X", "CS2R R2, SR_CLOCKLO"]
            + [f"MUFU.SIN R{4 + (k + 1) % 8}, R{4 + k % 8}" for k in range(SMALL)]
            + ["@P0 BRA 0x30", "CS2R R8, SR_CLOCKLO", "EXIT", "BRA 0xd0"])
    for k, insn in enumerate(body):
        lines.append(f"        /*{k * 16:04x}*/                   {insn} ;"
                     f"                 /* 0x000fe20000000f00 */")
        lines.append("                                                     "
                     "/* 0x000fc80000000000 */")
    text = "\n".join(lines) + "\n\t\t..........\n"
    assert list(sass_functions(text)) == ["latency_f32_sin"]
    problems = check_sass(SIN, text)
    assert len(problems) == 1 and "backward branch at /*00a0*/" in problems[0]
    assert check_sass(SIN, text.replace("@P0 BRA 0x30", "NOP")) == []


# ------------------------------------------------------------------ checks, new families

DIV = dataclasses.replace(divergence(4), ops_per_thread=SMALL)


def _ptx_ifs(n, conditional=True):
    """n if/else statements as NVVM writes them: setp, a conditional bra to the else
    side, two adds, bra.uni over it, two adds."""
    out = ""
    for k in range(n):
        jump = f"\t@%p{3 + k % 2} bra \t$L__BB0_{10 + 2 * k};\n" if conditional else (
            f"\tbra.uni \t$L__BB0_{10 + 2 * k};\n")
        out += (f"\tsetp.eq.s32 \t%p{3 + k % 2}, %r{30 + k % 2}, 0;\n" + jump
                + _ptx_adds(2) + f"\tbra.uni \t$L__BB0_{11 + 2 * k};\n"
                + f"$L__BB0_{10 + 2 * k}:\n" + _ptx_adds(2, 3) + f"$L__BB0_{11 + 2 * k}:\n")
    return out


def test_check_ptx_counts_conditional_branches():
    assert check_ptx(DIV, _ptx("divergence_d_0_5", _ptx_ifs(SMALL))) == []
    problems = check_ptx(DIV, _ptx("divergence_d_0_5", _ptx_ifs(SMALL, conditional=False)))
    assert problems == ["PTX: only 0 conditional bra in the timed region, fewer than the 8 "
                        "the benchmark executes (folded, eliminated or moved out of the "
                        "region, or a clock read is missing)"]
    # the same text checked as an ordinary benchmark of bra counts the unconditional too
    plain = dataclasses.replace(DIV, count="targets", ptx_target="bra.uni")
    assert check_ptx(plain, _ptx("divergence_d_0_5", _ptx_ifs(SMALL))) == []


def _sass_ifs(n):
    """n if/else statements as ptxas 13.0 writes them: BSSY, @!P0 BRA to the else side,
    two adds, BRA to the join, two adds, BSYNC."""
    lines = []
    for k in range(n):
        lines += [f"BSSY B0, `(.L_x_{20 + 2 * k})", f"@!P{k % 2} BRA `(.L_x_{21 + 2 * k})",
                  *_sass_adds(2), f"BRA `(.L_x_{20 + 2 * k})", f".L_x_{21 + 2 * k}:",
                  *_sass_adds(2), f".L_x_{20 + 2 * k}:", "BSYNC B0"]
    return lines


def test_check_sass_counts_conditional_branches():
    assert check_sass(DIV, _sass("divergence_d_0_5", _sass_ifs(SMALL))) == []
    # if-converted: both sides predicated, no branch left
    predicated = []
    for k in range(SMALL):
        predicated += [f"@P{k % 2} " + a for a in _sass_adds(2)]
        predicated += [f"@!P{k % 2} " + a for a in _sass_adds(2)]
    problems = check_sass(DIV, _sass("divergence_d_0_5", predicated))
    assert problems == ["SASS: only 0 conditional BRA in the timed region, fewer than the 8 "
                        "the benchmark executes (folded, eliminated or moved out of the "
                        "region, or a clock read is missing)"]
    # unconditional BRA (or @PT BRA) does not count
    half = [x.replace("@!P1 BRA", "@PT BRA") for x in _sass_ifs(SMALL)]
    assert any("only 4 conditional BRA" in p for p in check_sass(
        DIV, _sass("divergence_d_0_5", half)))


def test_parsers_keep_the_guard():
    insns, _ = parse_sass("        /*0130*/               @!P0 BRA `(.L_x_1) ;\n"
                          "        /*0140*/                   IADD3 R4, R4, R5, RZ ;")
    assert [(i.guard, i.opcode) for i in insns] == [("@!P0", "BRA"), ("", "IADD3")]
    insns, _ = parse_ptx("\t@%p1 bra \t$L__BB0_2;\n\tadd.s32 %r1, %r1, %r2;\n")
    assert [(i.guard, i.opcode) for i in insns] == [("@%p1", "bra"), ("", "add.s32")]


def test_check_sass_memory_targets_keep_the_cache_operator():
    load = dataclasses.replace(load_throughput("dram"), ops_per_thread=SMALL)
    chase = [f"LDG.E.64.STRONG.GPU R{4 + 2 * (k % 8)}, desc[UR4][R{4 + 2 * (k % 8)}.64]"
             for k in range(SMALL)]
    assert check_sass(load, _sass(load.kernel_name, chase)) == []
    weak = [x.replace(".STRONG.GPU", "") for x in chase]  # a plain, L1-cached load
    assert any("only 0 LDG.E.64.STRONG.GPU" in p
               for p in check_sass(load, _sass(load.kernel_name, weak)))
    store = dataclasses.replace(store_throughput("dram"), ops_per_thread=SMALL)
    stores = [f"STG.E.64 desc[UR4][R10.64+{hex(k * 0x800)}], R{12 + 2 * k}" for k in range(8)]
    assert check_sass(store, _sass(store.kernel_name, stores)) == []
    # address arithmetic left in SASS is other work
    unfolded = [x for k, s in enumerate(stores) for x in
                (f"IADD3 R{30 + k}, P0, R10, {hex(k * 0x800)}, RZ", s)]
    assert any("P3 selectivity" in p for p in check_sass(store, _sass(store.kernel_name,
                                                                       unfolded)))


def test_check_ptx_store_addresses_are_companions():
    store = dataclasses.replace(store_throughput("dram"), ops_per_thread=SMALL)
    timed = "".join(f"\tadd.s64 \t%rd{20 + k}, %rd16, {k * 2048};\n"
                    f"\tst.global.u64 [%rd{20 + k}], %rd{8 + k};\n" for k in range(SMALL))
    assert check_ptx(store, _ptx(store.kernel_name, timed)) == []
    assert any("mul.wide.u32 x8" in p for p in check_ptx(store, _ptx(
        store.kernel_name, timed.replace("add.s64", "mul.wide.u32"))))
