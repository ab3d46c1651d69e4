"""The OpenCL C front-end (kernelcast.frontends.opencl): access classes on hand-written
kernels and against a brute-force evaluation over a warp, exact operation counts,
loops, branches, macros, folding, conversions, and positioned errors."""

from __future__ import annotations

import pickle
import re

import pytest

from kernelcast.errors import UsageError
from kernelcast.frontends.opencl import (
    ACCESS_CLASSES,
    MAX_SOURCE_CHARS,
    TYPE_BYTES,
    Argument,
    OpenCLSourceError,
    access_class,
    count_kernel,
    load_opencl,
    parse_opencl,
)

RANDOM_17 = """#define HEIGHT 1024
#define WIDTH 1024
__kernel void random_realistic_17(__global const float *restrict matrix,
                                  __global const float *restrict xxx,
                                  __global float *restrict res)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    res[y * WIDTH + x] = ((x / (xxx[x & 0x7F] / (matrix[(1 % HEIGHT) * WIDTH + (361 % WIDTH)] * matrix[y * WIDTH + x]))) * xxx[y & 0x7F]) + 747.18744f;
}
"""
SQ_MOD = """kernel void sq_mod(global float *matrix, global float *res, unsigned int m, unsigned int n) {
    size_t current_pos = get_global_id(0);
    unsigned int current_row = current_pos / n;
    unsigned int current_col = current_pos % n;
    res[current_pos] = matrix[current_row * n + current_col] * matrix[current_row * n + current_col] - matrix[current_col];
}
"""


def kernel(body: str, params: str = "__global const float *a, __global float *b, int n",
           defines: str = "") -> str:
    return (f"{defines}__kernel void k({params}) {{\n"
            f"    int x = get_global_id(0);\n    int y = get_global_id(1);\n{body}\n}}\n")


def classes(counts, array=None):
    return [(a.array, a.direction, a.access_class) for a in counts.access_list
            if array is None or a.array == array]


# -- access classes ----------------------------------------------------------------------

def test_the_random_kernel_gets_the_expected_classes_and_counts():
    c = count_kernel(RANDOM_17)
    assert classes(c) == [("res", "write", "coalesced"), ("xxx", "read", "interval"),
                          ("matrix", "read", "constant"), ("matrix", "read", "coalesced"),
                          ("xxx", "read", "constant")]
    assert c.ops == {"add:float": 1, "add:int": 2, "and:int": 2, "convert:float": 1,
                     "div:float": 2, "mul:float": 2, "mul:int": 2}
    assert c.accesses == {"global:read:coalesced": 1, "global:read:constant": 2,
                          "global:read:interval": 1, "global:write:coalesced": 1,
                          "private:read:private": 7, "private:write:private": 2}
    assert (c.name, c.work_dims, c.barriers) == ("random_realistic_17", 2, 0)
    assert c.defines == {"HEIGHT": 1024, "WIDTH": 1024}
    assert c.arguments[2] == Argument("res", "float", True, "global", False)
    assert all(a.line == 9 and a.count == 1 for a in c.access_list)


def test_a_transposed_read_is_complex_and_a_repeated_one_identical():
    body = RANDOM_17.replace(
        "}\n", "    res[x] = matrix[x * WIDTH + y] + matrix[y * WIDTH + x];\n}\n")
    c = count_kernel(body)
    assert classes(c)[5:] == [("res", "write", "coalesced"), ("matrix", "read", "complex"),
                              ("matrix", "read", "identical")]


def test_the_slides_sq_mod_example():
    c = count_kernel(SQ_MOD)
    # (p / n) * n + p % n is p in C: the first read is coalesced; p % n has an unknown
    # range (n is an argument), so the last read is complex.
    assert classes(c) == [("res", "write", "coalesced"), ("matrix", "read", "coalesced"),
                          ("matrix", "read", "identical"), ("matrix", "read", "complex")]
    assert c.ops == {"add:uint": 2, "div:ulong": 1, "mod:ulong": 1, "mul:float": 1,
                     "mul:uint": 2, "sub:float": 1}
    assert c.arguments == (Argument("matrix", "float", True, "global", False),
                           Argument("res", "float", True, "global", False),
                           Argument("m", "uint", False, "private", False),
                           Argument("n", "uint", False, "private", False))


@pytest.mark.parametrize("index, expected", [
    # constant: no dependence on dimension-0 ids
    ("5", "constant"), ("y", "constant"), ("y * 1024 + 5", "constant"),
    ("(1 % 1024) * 1024 + (361 % 1024)", "constant"), ("n", "constant"),
    ("y & 0x7F", "constant"), ("x - lx", "constant"), ("get_group_id(0)", "constant"),
    # interval: depends on them, within fewer than 1024 elements
    ("x & 0x7F", "interval"), ("x % 64", "interval"), ("(x & 0x7F) + 3", "interval"),
    ("(x & 15) * 4", "interval"), ("x % 1024", "interval"), ("(x & 0x7F) + y", "interval"),
    ("(uchar)x", "interval"), ("x >> 25", "interval"), ("clamp(x, 0, 100)", "interval"),
    # coalesced: affine with coefficient +1 or -1
    ("x", "coalesced"), ("x + 5", "coalesced"), ("y * 1024 + x", "coalesced"),
    ("y * n + x", "coalesced"), ("100000 - x", "coalesced"), ("x % 4096", "coalesced"),
    ("lx", "coalesced"), ("2 * x / 2", "coalesced"), ("get_global_id(0)", "coalesced"),
    ("(y * n + x) % 65536", "coalesced"), ("n > 3 ? x : x + 1", "coalesced"),
    # complex: everything else
    ("x * 1024 + y", "complex"), ("x * 2", "complex"), ("(x * y) % 1024", "complex"),
    ("x * x", "complex"), ("x / 2", "complex"), ("n * x", "complex"),
    ("(x ^ 5) * 3", "complex"), ("x % n", "complex"), ("x > 3 ? x : 0", "complex"),
])
def test_access_class(index, expected):
    assert access_class(index) == expected


def test_a_variable_assigned_twice_is_tracked_in_straight_line_code_but_not_in_a_loop():
    assert access_class("i", prelude="int i = x; i = i + 1;") == "coalesced"
    assert access_class("i", prelude="int i = x; for (int k = 0; k < 4; k++) i += 1;") \
        == "complex"
    assert access_class("i", prelude="int i = x; if (n > 0) i = 2 * x;") == "complex"
    assert access_class("i", prelude="int i = x; if (n > 0) i = x; else i = x;") \
        == "coalesced"
    assert access_class("i", prelude="int i;") == "complex"


def test_identical_needs_the_same_array_the_same_element_and_no_write_between():
    c = count_kernel(kernel("    b[x] = a[x] + a[x] + a[y] + a[y];\n"
                            "    b[y * n + x] = b[x] + 1.0f;\n"
                            "    b[y * n + x] = 2.0f;\n"
                            "    b[x] = b[x];\n"))
    assert classes(c) == [
        ("b", "write", "coalesced"), ("a", "read", "coalesced"), ("a", "read", "identical"),
        ("a", "read", "constant"), ("a", "read", "identical"),
        ("b", "write", "coalesced"), ("b", "read", "identical"),
        ("b", "write", "identical"),
        ("b", "write", "coalesced"), ("b", "read", "coalesced")]


def test_identical_after_substitution_and_across_branches():
    c = count_kernel(kernel("    int i = y * 64 + x;\n"
                            "    float v = a[i] + a[y * 64 + x];\n"
                            "    if (v > 0.0f) v = a[x + 1]; else v = a[x + 1] + a[x + 2];\n"
                            "    b[x] = a[x + 1] + a[x + 2];\n"))
    assert classes(c, "a") == [
        ("a", "read", "coalesced"), ("a", "read", "identical"),
        ("a", "read", "coalesced"), ("a", "read", "coalesced"), ("a", "read", "coalesced"),
        ("a", "read", "identical"), ("a", "read", "coalesced")]


def test_local_constant_and_private_arrays():
    src = """__constant float w[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__kernel void k(__global const float *a, __global float *b, __local float *l) {
    __local float tile[8][64];
    float p[2];
    int lx = get_local_id(0), ly = get_local_id(1);
    tile[ly][lx] = a[get_global_id(0)];
    l[lx] = w[ly & 3];
    barrier(CLK_LOCAL_MEM_FENCE);
    p[0] = tile[lx & 7][ly] + l[63 - lx];
    p[1] = w[lx % 4] * tile[ly][0];
    b[get_global_id(0)] = p[0] + p[1];
}
"""
    c = count_kernel(src)
    assert classes(c) == [
        ("tile", "write", "coalesced"), ("a", "read", "coalesced"), ("l", "write", "coalesced"),
        ("w", "read", "constant"), ("p", "write", "private"), ("tile", "read", "interval"),
        ("l", "read", "coalesced"), ("p", "write", "private"), ("w", "read", "interval"),
        ("tile", "read", "constant"), ("b", "write", "coalesced"), ("p", "read", "private"),
        ("p", "read", "private")]
    assert c.barriers == 1 and c.work_dims == 2
    assert c.accesses["local:read:interval"] == 1 and c.accesses["constant:read:interval"] == 1


# -- a brute-force check of the classes -------------------------------------------------

class I32:
    """An int with OpenCL C semantics (32-bit wrap, truncating / and %, masked shifts)."""

    def __init__(self, v):
        v = int(v) & 0xFFFFFFFF
        self.v = v - (1 << 32) if v >> 31 else v

    def _b(self, o, f):
        return I32(f(self.v, o.v if isinstance(o, I32) else o))

    def __add__(self, o): return self._b(o, lambda a, b: a + b)
    __radd__ = __add__
    def __sub__(self, o): return self._b(o, lambda a, b: a - b)
    def __rsub__(self, o): return I32(o) - self
    def __mul__(self, o): return self._b(o, lambda a, b: a * b)
    __rmul__ = __mul__
    def __truediv__(self, o): return self._b(o, lambda a, b: int(a / b) if abs(a) < 2**52 else 0)
    def __mod__(self, o): return self._b(o, lambda a, b: a - b * int(a / b))
    def __and__(self, o): return self._b(o, lambda a, b: a & b)
    __rand__ = __and__
    def __xor__(self, o): return self._b(o, lambda a, b: a ^ b)
    def __rshift__(self, o): return self._b(o, lambda a, b: a >> (b & 31))
    def __lshift__(self, o): return self._b(o, lambda a, b: a << (b & 31))


def evaluator(index: str):
    """A function (x, y) -> the index's value, with lx = x % 64 and n = 1000."""
    code = compile(re.sub(r"\b(0x[0-9a-fA-F]+|\d+)\b", r"I32(\1)", index), index, "eval")

    def value(x: int, y: int) -> int:
        env = {"I32": I32, "x": I32(x), "y": I32(y), "lx": I32(x % 64), "n": I32(1000)}
        return eval(code, env).v  # noqa: S307 -- the test's own expressions
    return value


BRUTE = [
    ("5", "constant"), ("y * 1024 + 5", "constant"), ("(1 % 1024) * 1024 + (361 % 1024)",
                                                      "constant"),
    ("y & 0x7F", "constant"), ("x - lx", "constant"), ("(y * n) % 7", "constant"),
    ("x & 0x7F", "interval"), ("x % 64", "interval"), ("(x & 0x7F) + 3", "interval"),
    ("(x & 15) * 4", "interval"), ("(x & 0x7F) + y", "interval"), ("(x % 100) / 2",
                                                                   "interval"),
    ("x >> 25", "interval"), ("lx & 7", "interval"), ("(x ^ 5) & 255", "interval"),
    ("x", "coalesced"), ("x + 5", "coalesced"), ("y * 1024 + x", "coalesced"),
    ("y * n + x", "coalesced"), ("100000 - x", "coalesced"), ("x % 4096", "coalesced"),
    ("lx", "coalesced"), ("2 * x / 2", "coalesced"), ("(y * n + x) % 65536", "coalesced"),
    ("x * 1024 + y", "complex"), ("x * 2", "complex"), ("(x * y) % 1024", "complex"),
    ("x * x", "complex"), ("x / 2", "complex"), ("(x ^ 5) * 3", "complex"),
    ("(x % 68) - (x + 55788)", "complex"),  # -x cancels x % 68 only between wraps
]


@pytest.mark.parametrize("index, expected", BRUTE)
def test_the_class_holds_for_every_warp_by_brute_force(index, expected):
    assert access_class(index) == expected
    brute = evaluator(index)
    for y in (3, 17, 250):
        for base in (0, 32, 4064, 65536, 99968):
            warp = [brute(base + i, y) for i in range(32)]
            steps = [b - a for a, b in zip(warp, warp[1:])]
            if expected == "constant":
                assert len(set(warp)) == 1, (index, base, y, warp)
            elif expected == "coalesced":  # stride ±1 (a modulus >= 32 wraps at most once)
                assert sum(abs(s) != 1 for s in steps) <= 1, (index, base, y, warp)
                assert len({s for s in steps if abs(s) == 1}) == 1
            elif expected == "complex":
                assert set(steps) - {1, -1}, (index, base, y, warp)
        if expected == "interval":
            values = [brute(x, y) for x in range(0, 200_000, 61)]
            assert max(values) - min(values) < 1024, (index, y)


# -- operation counts --------------------------------------------------------------------

def test_a_loop_multiplies_its_body_and_counts_its_own_compare_and_increment():
    c = count_kernel(kernel("    float s = 0.0f;\n"
                            "    for (int i = 0; i < 10; i++)\n"
                            "        s += a[x] * a[i * 64 + x];\n"
                            "    b[x] = s;\n"))
    assert c.ops == {"add:float": 10, "add:int": 20, "cmp:int": 10, "mul:float": 10,
                     "mul:int": 10}
    assert c.accesses == {"global:read:coalesced": 11, "global:read:identical": 9,
                          "global:write:coalesced": 1, "private:read:private": 62,
                          "private:write:private": 24}
    assert [(a.access_class, a.count) for a in c.access_list if a.array == "a"] == [
        ("coalesced", 1), ("identical", 9), ("coalesced", 10)]


@pytest.mark.parametrize("loop, trips", [
    ("int i = 0; i < 10; i++", 10), ("int i = 0; i <= 9; ++i", 10),
    ("int i = 10; i > 0; i--", 10), ("int i = 0; i < 10; i += 3", 4),
    ("int i = 0; i != 8; i += 2", 4), ("int i = 9; i >= 0; i -= 1", 10),
    ("int i = 0; 10 > i; i = i + 1", 10), ("int i = 5; i < 5; i++", 0),
    ("int i = -N; i < N; i++", 8),
])
def test_trip_counts(loop, trips):
    c = count_kernel(kernel(f"    for ({loop}) b[x] = 1.0f;\n", defines="#define N 4\n"))
    assert c.accesses.get("global:write:coalesced", 0) == trips


def test_nested_loops_multiply_and_repeat_invariant_reads_as_identical():
    c = count_kernel(kernel("    for (int i = 0; i < 3; i++)\n"
                            "        for (int j = 0; j < 4; j++)\n"
                            "            b[x] += a[j] + a[i];\n"))
    assert c.ops == {"add:float": 24, "add:int": 15, "cmp:int": 15}
    assert [(a.array, a.access_class, a.count) for a in c.access_list] == [
        ("b", "coalesced", 12), ("b", "coalesced", 12), ("a", "constant", 4),
        ("a", "identical", 8), ("a", "constant", 3), ("a", "identical", 9)]


def test_if_counts_the_condition_and_both_branches():
    c = count_kernel(kernel("    if (x < n) b[x] = 1.0f; else b[x] = 2.0f * a[x + 1];\n"))
    assert c.ops == {"add:int": 1, "cmp:int": 1, "mul:float": 1}
    assert c.accesses["global:write:coalesced"] == 2
    assert c.accesses["global:read:coalesced"] == 1


def test_a_constant_condition_is_folded_and_only_the_live_branch_counts():
    c = count_kernel(kernel("    if (N > 4) b[x] = 1.0f; else b[x] = a[x] * 2.0f;\n"
                            "    b[y] = N < 4 ? a[x] : 3.0f;\n", defines="#define N 8\n"))
    assert c.ops == {}
    assert classes(c) == [("b", "write", "coalesced"), ("b", "write", "constant")]


def test_defines_are_substituted_and_constants_folded_without_counting():
    c = count_kernel(kernel("    b[y * W + x] = SCALE * a[x] * (2.0f * 3.0f + 1.0f);\n"
                            "    int k = (1 << 4) - 1;\n"
                            "    b[x + HALF] = a[k];\n",
                            defines="#define W (16 * 4)\n#define SCALE 2.5f\n"
                                    "#define HALF (W / 2)\n"))
    assert c.ops == {"add:int": 2, "mul:float": 2, "mul:int": 1}
    assert c.defines == {"W": 64, "SCALE": 2.5, "HALF": 32}
    assert classes(c)[-1] == ("a", "read", "constant")


@pytest.mark.parametrize("expr, ops", [
    ("float f = x;", {"convert:float": 1}),
    ("float f = 1;", {}),
    ("double d = (float)x;", {"convert:float": 1, "convert:double": 1}),
    ("float f = n; int i = f * 2.0;", {"convert:float": 1, "convert:double": 1,
                                       "mul:double": 1, "convert:int": 1}),
    ("uint u = x; long l = x + u;", {"add:uint": 1}),
    ("float f = x * 1.5f;", {"convert:float": 1, "mul:float": 1}),
    # n to float, f to double for the double literal, the double product back to float
    ("float f = n; float g = f * 1.5;", {"convert:float": 2, "convert:double": 1,
                                         "mul:double": 1}),
    ("ulong g = get_global_id(0) + 1;", {"add:ulong": 1}),
    ("long l = x * 2L;", {"mul:long": 1}),
    ("uint u = x + 1u;", {"add:uint": 1}),
    ("float f = sqrt((float)x);", {"convert:float": 1, "call.sqrt:float": 1}),
    ("float f = sqrt(x);", {"convert:float": 1, "call.sqrt:float": 1}),
    ("double d = n; d = native_exp(d);", {"convert:double": 1, "call.native_exp:double": 1}),
    ("int i = min(x, 5) + abs(y);", {"call.min:int": 1, "call.abs:uint": 1, "add:uint": 1}),
    # n to float; the double 1.0 makes it fma(double, double, double): f to double
    # twice, and the double result back to float
    ("float f = n; f = fma(f, f, 1.0);", {"convert:float": 2, "convert:double": 2,
                                          "call.fma:double": 1}),
    ("int i = (x > 0 && y > 0) + !x + ~x;", {"cmp:int": 2, "logic:int": 2, "not:int": 1,
                                             "add:int": 2}),
    ("float f = -(float)n;", {"convert:float": 1, "neg:float": 1}),
    ("int i = x > y ? x : y + 1;", {"cmp:int": 1, "add:int": 1, "select:int": 1}),
    ("int i = x; i += 2; i -= y; i *= 3; i /= 2; i %= 5; i <<= 1; i >>= 1; i &= 7; "
     "i |= 8; i ^= y; i++; --i;",
     {"add:int": 2, "sub:int": 2, "mul:int": 1, "div:int": 1, "mod:int": 1, "shl:int": 1,
      "shr:int": 1, "and:int": 1, "or:int": 1, "xor:int": 1}),
    ("int i = x; i += 1.5f;", {"convert:float": 1, "add:float": 1, "convert:int": 1}),
    ("bool t = x == y; int j = t + 1;", {"cmp:int": 1, "add:int": 1}),
])
def test_operations_by_kind_and_type(expr, ops):
    c = count_kernel(kernel(f"    {expr}\n"))
    assert c.ops == ops


def test_counts_per_work_item_with_barriers_in_a_tiled_kernel():
    src = """#define TILE 16
__kernel void mm(__global const float *A, __global const float *B, __global float *C) {
    __local float As[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < 64; t++) {
        As[ty][tx] = A[row * 1024 + t * TILE + tx];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * B[(t * TILE + k) * 1024 + col];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * 1024 + col] = acc;
}
"""
    c = count_kernel(src)
    assert c.barriers == 128
    assert c.ops["mul:float"] == 1024 and c.ops["cmp:int"] == 64 + 1024
    assert c.accesses["local:read:constant"] == 1024
    assert c.accesses["global:read:coalesced"] == 64 + 1024
    assert c.accesses["local:write:coalesced"] == 64


def test_work_dims_and_a_parsed_unit_with_several_kernels():
    unit = parse_opencl("__kernel void a(__global int *p) { p[get_local_id(1)] = 1; }\n"
                        "kernel void b(global int *p) { p[0] = 2; }\n", path="two.cl")
    assert unit.kernels == ("a", "b")
    assert count_kernel(unit, "a").work_dims == 2
    assert count_kernel(unit, "b").work_dims == 1
    with pytest.raises(OpenCLSourceError, match=r"^two\.cl:1:1: the source has 2 kernels"):
        count_kernel(unit)
    with pytest.raises(OpenCLSourceError) as e:
        count_kernel(unit, "c")
    assert str(e.value) == "two.cl:1:1: no kernel named 'c' (kernels: a, b)"


def test_comments_pragmas_attributes_and_qualifiers_are_accepted(tmp_path):
    src = """// a comment
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define N 4 /* the size */ // and more
/* a block
   comment */
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void k(__global volatile double *restrict d, __constant int *c, const unsigned long z,
       __local char *s, short h, bool flag, size_t st) {
    __private uint i = get_global_id(0);
    d[i] = c[N] + z + s[0] + h + flag + st;
}
"""
    path = tmp_path / "k.cl"
    path.write_text(src)
    c = count_kernel(load_opencl(path))
    assert [a.type for a in c.arguments] == ["double", "int", "ulong", "char", "short",
                                            "bool", "ulong"]
    assert [TYPE_BYTES[a.type] for a in c.arguments] == [8, 4, 8, 1, 2, 1, 8]
    assert c.ops == {"add:ulong": 5, "convert:double": 1}
    assert c.defines == {"N": 4}


# -- errors ------------------------------------------------------------------------------

K = "__kernel void k(__global float *a, int n) {\n%s\n}\n"
ERRORS = [
    (K % "float4 v = 0;", "k.cl:2:1: vector types are not supported"),
    (K % "int i = 0; while (i < n) { i++; }",
     "k.cl:2:12: the trip count of the while loop depends on the argument 'n', which was "
     "not given (give its value: --arg n=VALUE)"),
    (K % "do { } while (1);",
     "k.cl:2:1: the while loop runs more than 4096 passes at one work-item (or never ends)"),
    (K % "switch (n) { }", "k.cl:2:1: switch statements are not supported"),
    (K % "break;", "k.cl:2:1: break is not supported"),
    (K % "a[0] = foo(1.0f);", "k.cl:2:8: unknown function 'foo'"),
    (K % "a[0] = q;", "k.cl:2:8: undeclared name 'q'"),
    (K % "int x = 1\nint y = 2;", "k.cl:3:1: expected ';', got 'int'"),
    (K % "for (int i = 0; i < n; i++) { a[i] = 0; }",
     "k.cl:2:1: the trip count of the loop over 'i' depends on the argument 'n', which "
     "was not given (give its value: --arg n=VALUE)"),
    (K % "const int c = 3; c = 4;", "k.cl:2:18: cannot assign to const 'c'"),
    (K % "int x = get_global_id(n);",
     "k.cl:2:23: the argument of get_global_id must be a constant 0, 1 or 2"),
    (K % "int x = get_global_id();", "k.cl:2:9: get_global_id takes 1 argument, got 0"),
    (K % "a[0] = 1 % 2.0f;", "k.cl:2:10: operator '%' needs integer operands"),
    (K % "int x = 1 / 0;", "k.cl:2:11: division by zero in a constant expression"),
    (K % "half h = 0;", "k.cl:2:1: the half type is not supported"),
    (K % "for (int i = 0; i < 10; i++) { i = 2; }",
     "k.cl:2:32: the loop counter 'i' is assigned in the loop body"),
    (K % "a[0] = 1.0f /* unterminated", "k.cl:2:13: unterminated comment ('/*' without '*/')"),
    (K % "a[0] = (1;", "k.cl:2:10: expected ')', got ';'"),
    (K % "a[0] = ;", "k.cl:2:8: expected an expression, got ';'"),
    (K % "int y = *a;", "k.cl:2:9: pointer dereference is not supported (write p[0])"),
    (K % "a[0] = 'c';", "k.cl:2:8: unexpected character \"'\""),
    (K % "return 1;", "k.cl:2:8: a kernel returns void (write 'return;')"),
    (K % "if (0) { a[0] = bar(); }", "k.cl:2:17: unknown function 'bar'"),
    ("#define SQ(x) ((x)*(x))\n__kernel void k() {}",
     "k.cl:1:9: function-like macros are not supported (SQ(...))"),
    ("#include <foo.h>\n__kernel void k() {}",
     "k.cl:1:1: preprocessor directive '#include' is not supported"),
    ("void f() {}\n__kernel void k() {}",
     "k.cl:1:6: only __kernel functions are supported (f is not one)"),
    ("__kernel void k(float *a) { }", "k.cl:1:17: a pointer argument needs an address space "
                                      "(__global, __local or __constant)"),
    ("#define N M\n#define M N\n__kernel void k(__global int *a) { a[0] = N; }",
     "k.cl:2:11: macro N refers to itself"),
    ("__kernel void k(__global int *a) { a[0] = N; }\n#define N 3\n",
     "k.cl:1:43: undeclared name 'N'"),
    ("__kernel void k(__global float *a) { a[0] = 1; ", "k.cl:1:48: expected a statement or "
                                                        "'}', got end of input"),
    ("", "k.cl:1:1: no __kernel function in the source"),
]


@pytest.mark.parametrize("source, message", ERRORS)
def test_errors_are_positioned(source, message):
    with pytest.raises(OpenCLSourceError) as e:
        count_kernel(source, path="k.cl")
    assert str(e.value) == message


def test_deep_nesting_and_huge_inputs_are_errors_not_crashes():
    deep = K % ("a[0] = " + "-(" * 400 + "n" + ")" * 400 + ";")
    with pytest.raises(OpenCLSourceError, match=r"^k\.cl:2:\d+: expression nested too deeply$"):
        count_kernel(deep, path="k.cl")
    chain = K % ("a[0] = " + " + ".join(["n"] * 300) + ";")
    with pytest.raises(OpenCLSourceError, match="expression nested too deeply"):
        count_kernel(chain, path="k.cl")
    with pytest.raises(OpenCLSourceError, match="statements nested too deeply"):
        count_kernel(K % ("{" * 400 + "}" * 400), path="k.cl")
    with pytest.raises(OpenCLSourceError) as e:
        count_kernel(" " * (MAX_SOURCE_CHARS + 1), path="k.cl")
    assert str(e.value).startswith("k.cl:1:1: the source is too large")
    blowup = "#define M0 n\n" + "".join(f"#define M{i + 1} (M{i} + M{i})\n" for i in range(40))
    with pytest.raises(OpenCLSourceError, match="the kernel is too large to count"):
        count_kernel(blowup + "__kernel void k(__global float *a, int n) { a[0] = M40; }")


def test_the_error_is_a_usage_error_and_pickles():
    err = OpenCLSourceError("k.cl", 3, 7, "boom")
    assert isinstance(err, UsageError) and str(err) == "k.cl:3:7: boom"
    assert str(pickle.loads(pickle.dumps(err))) == "k.cl:3:7: boom"
    assert str(OpenCLSourceError("k.cl", None, None, "gone")) == "k.cl: gone"


def test_an_unreadable_file_is_an_error_without_a_position(tmp_path):
    with pytest.raises(OpenCLSourceError) as e:
        load_opencl(tmp_path / "missing.cl")
    assert e.value.line is None and "cannot read the source" in str(e.value)


def test_the_class_vocabulary():
    assert ACCESS_CLASSES == ("coalesced", "constant", "interval", "identical", "complex")


def test_the_docs_example_runs():
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "docs" / "opencl.md"
    result = doctest.testfile(str(page), module_relative=False)
    assert result.attempted >= 4 and result.failed == 0
