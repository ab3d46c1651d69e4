"""Fuzzing the OpenCL C front-end: seeded random mutations (token and character level:
deletions, duplications, swaps, inserted words and characters, truncations) of valid
kernels must either count, with finite non-negative counts, or raise OpenCLSourceError
with a position inside the text and a message of one short line — never any other
exception (no lark error, RecursionError, IndexError, ...)."""

from __future__ import annotations

import math
import random
import re
import warnings

from kernelcast.errors import UncountedWarning
from kernelcast.frontends.opencl import OpenCLSourceError, count_kernel, parse_opencl
from tests.mutations import edit_characters, edit_tokens

CASES = 5_000
SOURCES = [
    """#define HEIGHT 1024
#define WIDTH 1024
__kernel void random_realistic_17(__global const float *restrict matrix,
                                  __global const float *restrict xxx,
                                  __global float *restrict res)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    res[y * WIDTH + x] = ((x / (xxx[x & 0x7F] / (matrix[(1 % HEIGHT) * WIDTH + (361 % WIDTH)]
        * matrix[y * WIDTH + x]))) * xxx[y & 0x7F]) + 747.18744f;
}
""",
    """kernel void sq_mod(global float *matrix, global float *res, unsigned int m, unsigned int n) {
    size_t current_pos = get_global_id(0);
    unsigned int current_row = current_pos / n;
    unsigned int current_col = current_pos % n;
    res[current_pos] = matrix[current_row * n + current_col]
        * matrix[current_row * n + current_col] - matrix[current_col];
}
""",
    """#define TILE 16
/* tiled product */
__kernel void mm(__global const float *A, __global const float *B, __global float *C, int n) {
    __local float As[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < 64; t++) {
        As[ty][tx] = A[row * n + t * TILE + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * B[(t * TILE + k) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * n + col] = acc;
}
""",
    """__constant float w[3] = {0.25f, 0.5f, 0.25f};
__kernel void blur(__global const uchar *in, __global float *out, const uint n) {
    uint i = get_global_id(0);
    float s = 0;   // weighted sum
    for (int d = -1; d <= 1; d++)
        s += w[d + 1] * (float)in[clamp((int)i + d, 0, (int)n - 1)];
    if (i < n && s > 0.5f) out[i] = sqrt(s); else out[i] = -s;
    out[i] += i > 3 ? fma(s, 2.0, 1.0) : (double)s / 3;
    i++;
}
""",
    """kernel void bits(global int *a, local int *scratch, long k) {
    int x = get_global_id(0) << 1 | 1;
    int lid = get_local_id(0);
    scratch[lid] = a[x % 4096] ^ ~x;
    barrier(CLK_LOCAL_MEM_FENCE);
    int v[4] = {1, 2, 3, 4};
    for (int j = 3; j >= 0; j -= 1) { v[j] <<= 2; v[j] >>= 1; v[j] %= 3; }
    a[x] = scratch[(lid + 1) & 63] + v[x & 3] + (int)(k >> 2) - !x + (x != 0 || x < 5);
    return;
}
""",
]
TOKEN = re.compile(r"\s+|/\*.*?\*/|//[^\n]*|#\w+|[A-Za-z_]\w*|[0-9.]+[fFuUlLxX0-9a-fA-F]*"
                   r"|<<=|>>=|[-+*/%&|^<>=!]=|\+\+|--|&&|\|\||<<|>>|.", re.S)
ALPHABET = ("[](){}<>:;,=+-*/%&|^!~?#.'\"\\\n\t 0123456789abcfxyzAFLUX_"
            "\x00\u00e9\u2014\U0001f600")
WORDS = ["while", "for", "if", "else", "do", "switch", "break", "return", "goto", "float4",
         "int", "uint", "long", "double", "half", "unsigned", "const", "__global", "__local",
         "__constant", "__kernel", "void", "restrict", "#define N 3\n", "#define F(x) x\n",
         "#include <x.h>\n", "#pragma unroll\n", "/*", "*/", "//", "\\\n", "9" * 40,
         "9" * 5000, "0x" + "f" * 5000, "0x7F", "1e400f", "0.5", "get_global_id(0)", "get_local_id(1)", "get_global_id(n)",
         "barrier(CLK_LOCAL_MEM_FENCE);", "sqrt(", "foo(", "a[", "]", "[0][0]", "{", "}",
         "(", ")", ";", ",", "?", ":", "=", "+=", "<<=", "++", "--", "*", "&", "/0", "% 0",
         "(float)", "(int)", "x", "i", "n", "N", "TILE", "-"]


CLASSES = [re.compile(r"[A-Za-z_]\w*"), re.compile(r"[0-9.]\w*"),
           re.compile(r"<<=|>>=|[-+*/%&|^]=|="), re.compile(r"&&|\|\||<<|>>|[<>!=]=|[-+*/%&|^<>]")]


def same_class(toks: list[str], rng: random.Random) -> None:
    """Replace a token by another of its class (name, number, assignment, operator): the
    result often still parses, so the semantic checks get exercised too."""
    i = rng.randrange(len(toks))
    for cls in CLASSES:
        if cls.fullmatch(toks[i]):
            others = [t for t in toks if cls.fullmatch(t)]
            toks[i] = rng.choice(others + ["x", "n", "0", "7", "2.5f", "1024", "-"])
            return


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.35:
            toks = TOKEN.findall(text) or [""]
            same_class(toks, rng)
            text = "".join(toks)
        elif r < 0.7:  # token level
            toks = TOKEN.findall(text) or [""]
            edit_tokens(toks, rng, WORDS)
            text = "".join(toks)
        else:  # character level
            text = edit_characters(text, rng, ALPHABET)
    return text


WORDS += ["typedef", "typedef float real;\n", "real", "while (", "#if 0\n", "#endif\n",
          "#ifdef TILE\n", "#else\n", "convert_int(", "INFINITY", "size_t", "-D"]


def check(text: str) -> bool:
    """Count every kernel of ``text``; True if all counted, False on OpenCLSourceError."""
    try:
        unit = parse_opencl(text, path="fuzz.cl")
        for name in unit.kernels:
            counts = count_kernel(unit, name)
            for value in (*counts.ops.values(), *counts.accesses.values(), counts.barriers):
                assert math.isfinite(value) and value >= 0, (counts, text)
        return True
    except OpenCLSourceError as e:
        assert e.path == "fuzz.cl" and e.message, text
        assert "\n" not in e.message and len(e.message) <= 400, (str(e)[:500], text)
        lines = text.split("\n")
        assert e.line is not None and 1 <= e.line <= len(lines), (str(e), text)
        assert 1 <= e.column <= len(lines[e.line - 1]) + 1, (str(e), text)
        return False
    except Exception as e:  # noqa: BLE001 -- any other exception is the finding
        raise AssertionError(f"{type(e).__name__}: {e}\n--- input ---\n{text}") from e


def test_the_seed_kernels_count():
    for source in SOURCES:
        assert check(source), source


#: Characters of ALPHABET that are no OpenCL C token.
FOREIGN = "\x00\u00e9\u2014\U0001f600"


def _foreign_in_code(text: str) -> bool:
    """Whether *text* has a FOREIGN character on a line of code, where nothing can hide
    it: no comment, no #if, no line continuation, not on a directive's line (an unused
    macro's body is never read)."""
    if any(hide in text for hide in ("//", "/*", "#if", "\\\n")):
        return False
    return any(c in line for line in text.split("\n") if not line.lstrip().startswith("#")
               for c in FOREIGN)


def test_fuzz_only_opencl_source_errors():
    """Every mutant counts or is refused (``check``); where the text alone says which, the
    front-end agrees: a mutant identical to its seed kernel counts, and one with a
    foreign character in its code is refused."""
    rng = random.Random(20261125)
    outcomes = []
    for _ in range(CASES):
        seed = rng.choice(SOURCES)
        text = mutate(seed, rng)
        outcomes.append((seed, text, check(text)))
    unchanged = [ok for seed, text, ok in outcomes if text == seed]
    foreign = [ok for _, text, ok in outcomes if _foreign_in_code(text)]
    counted = sum(ok for _, _, ok in outcomes)
    print(f"opencl fuzz: {CASES} cases, {counted} counted; {len(unchanged)} unchanged, "
          f"{len(foreign)} with a foreign character")
    assert len(unchanged) > 100 and all(unchanged)
    assert len(foreign) > 10 and not any(foreign)
    # some edited mutants count (the semantic checks are reached), some others are refused
    assert len(unchanged) < counted < CASES - len(foreign)


#: CI's share of the real programs' fuzz; benchmarks/fuzz_opencl_programs.py runs 10,000
PROGRAM_CASES = 60


def program_case(rng: random.Random) -> tuple:
    """A mutated real program and a launch for it: (text, kernel, options, scalars,
    global size, local size, stats), the launch's values sometimes extreme."""
    from kernelcast.suites.opencl_programs import PROGRAMS, source

    launch = rng.choice([p for p in PROGRAMS if p.size == "pocl"])
    text = mutate(source(launch), rng) if rng.random() < 0.9 else source(launch)
    scalars = {k: rng.choice([v, v, 0, -1, 1, 2**31 - 1, 2.5, 7]) if rng.random() < 0.2
               else v for k, v in launch.scalars.items()}
    if rng.random() < 0.05:
        scalars["nope"] = 1
    grid, group = launch.global_size, launch.local_size
    if rng.random() < 0.1:
        grid = tuple(rng.choice([1, 3, 64, 1 << 20]) for _ in grid)
        group = tuple(rng.choice([1, 2, 64]) for _ in grid)
    options = launch.options if rng.random() < 0.9 else rng.choice(["", "-D", "-D X=1", "-DTILE"])
    return text, launch.kernel, options, scalars, grid, group, dict(launch.stats)


def check_program(case) -> bool:
    """Count a mutated real program at its launch: finite, non-negative counts, or an
    OpenCLSourceError of one short line (positioned inside the text where it has a
    position) — never another exception; what was counted goes on to the models
    (``_models_take``). True where it counted."""
    text, kernel, options, scalars, grid, group, stats = case
    try:
        counts = count_kernel(text, kernel, path="fuzz.cl", options=options, scalars=scalars,
                              global_size=grid, local_size=group, stats=stats)
        for value in (*counts.ops.values(), *counts.accesses.values(), counts.barriers,
                      *counts.recurrences.values()):
            assert math.isfinite(value) and value >= 0, (counts, text)
    except OpenCLSourceError as e:
        assert e.path == "fuzz.cl" and e.message, text
        assert "\n" not in e.message and len(e.message) <= 400, (str(e)[:500], text)
        if e.line:  # line 0: the build options
            lines = text.split("\n")
            assert 1 <= e.line <= len(lines), (str(e), text)
        return False
    except Exception as e:  # noqa: BLE001 -- any other exception is the finding
        raise AssertionError(f"{type(e).__name__}: {e}\n--- case ---\n{case}") from e
    _models_take(counts, case)
    return True


def _models_take(counts, case) -> None:
    """What the fitted models and the counters read of a counted program: its paper
    properties and its warp-level memory counters, finite and non-negative, or a
    one-line UsageError (an array size that must be given)."""
    from kernelcast.errors import UsageError
    from kernelcast.facts.opencl import opencl_launch_facts
    from kernelcast.properties.opencl import opencl_properties

    text, kernel, options, scalars, grid, group, stats = case
    if math.prod(grid) > 1 << 22:  # the properties of a large launch take seconds
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UncountedWarning)
            props = opencl_properties(counts, grid, group, scalars=scalars)
            values = props.evaluate({})
            facts = opencl_launch_facts(counts, grid, group, scalars=scalars)
        for value in (*values.values(), *facts.counters.values()):
            assert math.isfinite(value) and value >= 0, (values, facts.counters, text)
    except UsageError as e:
        assert "\n" not in str(e) and len(str(e)) <= 400, (str(e)[:500], text)
    except Exception as e:  # noqa: BLE001 -- any other exception is the finding
        raise AssertionError(f"{type(e).__name__}: {e}\n--- case ---\n{case}") from e


def test_fuzz_real_programs_at_their_launches():
    rng = random.Random(20261127)
    counted = sum(check_program(program_case(rng)) for _ in range(PROGRAM_CASES))
    assert 0 < counted < PROGRAM_CASES
