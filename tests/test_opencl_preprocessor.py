"""The OpenCL C front-end's preprocessor (kernelcast.frontends.opencl.preprocessor):
build options (-D), #if/#ifdef/#ifndef/#elif/#else/#endif, #undef, line continuations,
#error, positioned errors, positions of the lines that follow; and, on PoCL, that a
conditional kernel built with the same options runs what the front-end counts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kernelcast.cli import main
from kernelcast.frontends.opencl import (
    OpenCLSourceError,
    count_kernel,
    load_opencl,
    parse_opencl,
)
from kernelcast.frontends.opencl.preprocessor import MAX_IF_DEPTH


def counts(source: str, options: str = "", **kw):
    return count_kernel(source, path="k.cl", options=options, **kw)


def error(source: str, options: str = "") -> str:
    with pytest.raises(OpenCLSourceError) as e:
        count_kernel(source, path="k.cl", options=options)
    return str(e.value)


def chosen(source: str, options: str = "") -> dict:
    """The macros in force at the end of ``source`` (a kernel is appended)."""
    return parse_opencl(source + "\n__kernel void k() {}\n", "k.cl", options).defines


LOOP = """__kernel void k(__global float *a) {
    int x = get_global_id(0);
    for (int i = 0; i < N; i++) a[x] += 1.0f;
}
"""


# -- conditional compilation -------------------------------------------------------------

def test_ifdef_ifndef_else_select_their_groups():
    src = "#ifdef A\n#define X 1\n#else\n#define X 2\n#endif\n#ifndef A\n#define Y 3\n#endif"
    assert chosen(src) == {"X": "2", "Y": "3"}
    assert chosen(src, "-D A") == {"A": "1", "X": "1"}
    assert chosen("#define A\n" + src) == {"A": "", "X": "1"}


def test_if_elif_else_take_the_first_true_branch():
    src = ("#if V == 1\n#define R 10\n#elif V == 2\n#define R 20\n#elif V >= 2\n#define R 30\n"
           "#else\n#define R 40\n#endif")
    assert [chosen(src, f"-D V={v}")["R"] for v in (1, 2, 3, 0)] == ["10", "20", "30", "40"]
    assert chosen(src)["R"] == "40"  # an undefined name is 0


def test_nested_groups_and_directives_in_groups_that_are_not_compiled():
    src = """#if defined(OUTER)
#  ifdef INNER
#    define R 1
#  else
#    define R 2
#  endif
#elif 0
#  if garbage (((        // never evaluated: its group is not compiled
#    define R 3
#  elif 1 / 0
#  endif
#  define F(x) x
#  include <nothing.h>
#  error not compiled
#  bogus directive
   this is not C {{{
#else
#  define R 4
#endif"""
    assert chosen(src, "-D OUTER -D INNER")["R"] == "1"
    assert chosen(src, "-DOUTER")["R"] == "2"
    assert chosen(src) == {"R": "4"}


def test_defined_in_both_forms_and_with_the_other_operators():
    src = ("#if defined(A) && defined B || !defined(C) && (defined A ? 1 : 0)\n#define R 1\n"
           "#else\n#define R 0\n#endif")
    assert chosen(src, "-D A -D B")["R"] == "1"
    assert chosen(src, "-D A -D C")["R"] == "0"
    assert chosen(src, "-D B")["R"] == "0"


@pytest.mark.parametrize("expr, value", [
    ("-7 / 2 == -3 && -7 % 2 == -1", 1),           # C truncates toward zero
    ("-1 < 0u", 0),                                  # -1 converted to unsigned
    ("-1 < 0", 1),
    ("0xFFFFFFFFFFFFFFFF == -1", 1),                 # 64-bit, as intmax_t/uintmax_t
    ("(1 << 62) * 4 == 0", 1),
    ("010 == 8 && 0x10 == 16 && 10u == 10 && 5L == 5", 1),
    ("~0 == -1 && !0 == 1 && !5 == 0 && -(-3) == 3", 1),
    ("(3 & 6) == 2 && (3 | 6) == 7 && (3 ^ 6) == 5 && 256 >> 4 == 16", 1),
    ("1 ? 2 : 1 / 0", 1),                            # the branch not taken is not evaluated
    ("0 && 1 / 0", 0),
    ("1 || 1 / 0", 1),
    ("UNDEFINED_NAME + 1 == 1", 1),
    ("TWICE == 2 * TILE && TILE == 16", 1),          # macros expand, recursively
    ("SELF", 0),                                     # #define SELF SELF: not expanded again
])
def test_if_expressions_follow_c(expr, value):
    src = (f"#define TWICE (TILE * 2)\n#define SELF SELF\n#if {expr}\n#define R 1\n#else\n"
           f"#define R 0\n#endif")
    assert chosen(src, "-D TILE=16")["R"] == str(value)


def test_macros_of_groups_not_compiled_do_not_exist():
    src = "#if 0\n#define N 4\n#endif\n" + LOOP
    assert error(src) == "k.cl:6:25: undeclared name 'N'"
    assert counts(src, "-D N=4").ops["add:float"] == 4


# -- build options -----------------------------------------------------------------------

@pytest.mark.parametrize("options, expected", [
    ("-D N=4", {"N": "4"}),
    ("-DN=4", {"N": "4"}),
    ("-D N", {"N": "1"}),
    ("-DN", {"N": "1"}),
    ("-D N=(2+2)", {"N": "(2+2)"}),
    ("-D N=", {"N": ""}),
    ("  -cl-fast-relaxed-math -D A=1 -cl-mad-enable -I /some/dir -Iinc -w -Werror "
     "-cl-std=CL1.2 -x spir -DB=2  ", {"A": "1", "B": "2"}),
    ("-D N=4 -D N=4", {"N": "4"}),  # the same definition twice is allowed
    ("", {}),
])
def test_build_option_forms(options, expected):
    unit = parse_opencl("__kernel void k() {}", "k.cl", options)
    assert unit.defines == expected and unit.options == options


@pytest.mark.parametrize("options, message", [
    ("-D", "k.cl: malformed build option '-D': -D needs a macro name (-D NAME or "
           "-D NAME=VALUE)"),
    ("-D -cl-mad-enable", "k.cl: malformed build option '-D': -D needs a macro name "
                          "(-D NAME or -D NAME=VALUE)"),
    ("-D 3X=1", "k.cl: malformed build option '-D 3X=1': a macro name starts with a "
                "letter or '_'"),
    ("-D=1", "k.cl: malformed build option '-D=1': a macro name starts with a letter or '_'"),
    ("-DSQ(x)=x*x", "k.cl: malformed build option '-DSQ(x)=x*x': function-like macros are "
                    "not supported (SQ(...))"),
    ("-D N:3", "k.cl: malformed build option '-D N:3': expected -D NAME or -D NAME=VALUE"),
    ("-D float=double", "k.cl: malformed build option '-D float=double': cannot define the "
                        "keyword 'float'"),
    ("-U N", "k.cl: malformed build option '-U': undefining macros is not supported"),
    ("TILE=16", "k.cl: malformed build option 'TILE=16': not an option (options start "
                "with '-')"),
    ("-D N=1 -D N=2", "k.cl: the build option '-D N=2' redefines macro N (defined by the "
                      "build option '-D N=1')"),
])
def test_malformed_build_options_are_errors_naming_them(options, message):
    assert error("__kernel void k() {}", options) == message


def test_option_macros_work_everywhere_like_a_define_at_the_top():
    src = """__constant int table[N] = {1, 2, 3};
__kernel void k(__global int *a) {
    __local int tile[N * TILE];
    int p[N];
    for (int i = 0; i < N; i++) p[i] = table[i];
    for (int j = 0; j < TILE; j++) a[j] = p[j % N] + tile[j];
}
"""
    with_options = counts(src, "-D N=3 -D TILE=16")
    with_defines = counts("#define N 3\n#define TILE 16\n" + src)
    assert with_options.ops == with_defines.ops
    assert with_options.accesses == with_defines.accesses
    assert with_options.defines == with_defines.defines == {"N": 3, "TILE": 16}
    assert with_options.ops["mod:int"] == 16 and with_options.accesses[
        "global:write:constant"] == 16
    # the lines of accesses are the source's own: two lines later with the #defines
    assert [a.line + 2 for a in with_options.access_list] == [
        a.line for a in with_defines.access_list]


def test_a_default_set_with_ifndef_is_overridden_by_an_option():
    src = "#ifndef N\n#define N 8\n#endif\n" + LOOP
    assert counts(src).ops["add:float"] == 8
    assert counts(src, "-D N=32").ops["add:float"] == 32


def test_an_option_macro_redefined_differently_in_the_source_is_an_error():
    src = "#define N 4\n" + LOOP
    assert error(src, "-D N=8") == ("k.cl:1:9: macro N redefined (defined by the build "
                                    "option '-D N=8')")
    assert counts(src, "-D N=4").ops["add:float"] == 4


def test_an_option_value_that_is_not_an_expression_is_an_error_where_used():
    src = "__kernel void k(__global int *a) { a[0] = N; }"
    assert parse_opencl(src, "k.cl", "-D N=1+").defines == {"N": "1+"}
    assert error(src, "-D N=1+") == ("k.cl: the value of macro N (build option '-D N=1+') "
                                     "is not an expression (expected an expression, got end "
                                     "of input)")
    # a name an option macro uses: line 0 is the build options, the column its place there
    assert error(src, "-D A=2 -D N=q") == "k.cl:0:13: undeclared name 'q'"


def test_options_reach_count_kernel_and_load_opencl(tmp_path):
    path = tmp_path / "k.cl"
    path.write_text(LOOP)
    unit = load_opencl(path, "-D N=5")
    assert unit.options == "-D N=5" and count_kernel(unit).ops["add:float"] == 5
    assert count_kernel(unit, options="-D N=5").ops["add:float"] == 5
    with pytest.raises(OpenCLSourceError, match="build options apply when the source is "
                                                "parsed"):
        count_kernel(unit, options="-D N=6")
    with pytest.raises(OpenCLSourceError, match="build options must be text"):
        parse_opencl(LOOP, "k.cl", ["-D", "N=5"])


# -- #define, #undef ---------------------------------------------------------------------

def test_undef_ends_a_macro_and_a_new_define_takes_over_from_its_line():
    src = """#define N 2
__kernel void k(__global float *a) {
    for (int i = 0; i < N; i++) a[i] = 1.0f;
#undef N
#define N 5
    for (int i = 0; i < N; i++) a[i] *= 3.0f;
#undef N
    a[0] = N;
}
"""
    assert error(src) == "k.cl:8:12: undeclared name 'N'"
    c = counts(src.replace("    a[0] = N;\n", ""))
    assert c.ops["mul:float"] == 5
    assert sum(a.count for a in c.access_list if a.direction == "write") == 7
    assert c.defines == {}  # no macro is in force at the end
    unit = parse_opencl(src, "k.cl")
    assert [(line, m and m.value) for line, m in unit.macro_history["N"]] == [
        (1, "2"), (4, None), (5, "5"), (7, None)]


def test_an_undefined_name_can_be_declared_and_undef_of_an_unknown_name_is_nothing():
    src = ("#define N 4\n#undef N\n#undef NEVER_DEFINED\n__kernel void k(__global int *a) {\n"
           "    int N = 3;\n    a[N] = 1;\n}\n")
    assert [(a.array, a.direction, a.count) for a in counts(src).access_list] == [
        ("a", "write", 1)]


def test_redefinitions_identical_or_not():
    assert chosen("#define N (1 + 2)\n#define N (1  +  2) /* same tokens */") == {
        "N": "(1 + 2)"}
    assert error("#define N 1\n#define N 2\n" + LOOP) == ("k.cl:2:9: macro N redefined "
                                                         "(first defined on line 1)")
    assert chosen("#define N 1\n#undef N\n#define N 2") == {"N": "2"}


def test_a_define_continued_over_lines():
    src = "#define N \\\n    (2 \\\n     + 3)\n#define M 7\n" + LOOP
    c = counts(src)
    assert c.ops["add:float"] == 5 and c.defines == {"N": 5, "M": 7}
    assert parse_opencl(src, "k.cl").defines["N"] == "(2 + 3)"
    # a name on the value's third line is reported there
    bad = "#define N \\\n    (2 \\\n     + q)\n" + LOOP
    assert error(bad) == "k.cl:3:8: undeclared name 'q'"
    bad = "#define N \\\n    (2 \\\n     + ])\n" + LOOP
    assert error(bad) == ("k.cl:3:8: the value of macro N is not an expression (expected an "
                          "expression, got ']')")
    # lines after a continued directive keep their numbers
    body = LOOP.replace("1.0f", "zz")
    column = body.splitlines()[2].index("zz") + 1
    assert error("#define N \\\n    4\n" + body) == f"k.cl:5:{column}: undeclared name 'zz'"


def test_continued_conditionals_and_windows_line_ends():
    src = "#if defined(A) && \\\r\n    A > 2\r\n#define R 1\r\n#else\r\n#define R 0\r\n#endif"
    assert chosen(src, "-D A=3")["R"] == "1" and chosen(src, "-D A=2")["R"] == "0"


def test_ignored_directives_and_error():
    assert chosen("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#line 100 \"x.cl\"\n"
                  "#warning this is fine\n#\n#define N 1") == {"N": "1"}
    src = "#ifndef TILE\n#error TILE must be given:   -D TILE=N /* a comment */\n#endif\n"
    assert error(src + LOOP) == "k.cl:2:1: #error TILE must be given: -D TILE=N"
    assert error("#if 1\n#  error\n#endif\n" + LOOP) == "k.cl:2:1: #error"
    assert counts(src + LOOP, "-D TILE=2 -D N=1").ops["add:float"] == 1


# -- positions ---------------------------------------------------------------------------

def test_lines_of_groups_not_compiled_are_blanked_and_later_positions_kept():
    src = """#define N 4
#if N > 8
__kernel void big(__global float *a) { a[0] = 1.0f; }
#else
__kernel void k(__global float *a) {
#  ifdef EXTRA
    a[1] = a[2] + a[3];
#  endif
    a[get_global_id(0)] = 2.0f * a[N];
}
#endif
"""
    unit = parse_opencl(src, "k.cl")
    assert unit.kernels == ("k",)
    c = count_kernel(unit)
    assert [(a.array, a.direction, a.line) for a in c.access_list] == [
        ("a", "write", 9), ("a", "read", 9)]
    assert [a.line for a in counts(src, "-D EXTRA").access_list] == [7, 7, 7, 9, 9]
    assert error(src.replace("2.0f * a[N]", "2.0f * zz")) == "k.cl:9:34: undeclared name 'zz'"
    assert parse_opencl(src.replace("N 4", "N 9"), "k.cl").kernels == ("big",)


# -- errors ------------------------------------------------------------------------------

K = "__kernel void k() {}\n"
ERRORS = [
    ("#else\n" + K, "k.cl:1:1: #else without #if"),
    ("\n  #endif\n" + K, "k.cl:2:3: #endif without #if"),
    ("#elif 1\n" + K, "k.cl:1:1: #elif without #if"),
    ("#if 1\n#else\n#else\n#endif\n" + K, "k.cl:3:1: #else after #else (line 2)"),
    ("#if 1\n#else\n#elif 1\n#endif\n" + K, "k.cl:3:1: #elif after #else (line 2)"),
    ("#if 1\n#ifdef A\n#endif\n" + K, "k.cl:1:1: #if without #endif"),
    (K + "#ifndef A\n#if 0\n#endif\n", "k.cl:2:1: #ifndef without #endif"),
    ("#if\n#endif\n" + K, "k.cl:1:4: #if with no expression"),
    ("#define E\n#if E\n#endif\n" + K, "k.cl:2:6: #if with no expression"),
    ("#if 1 +\n#endif\n" + K, "k.cl:1:8: expected an expression in #if, got the end of "
                              "the line"),
    ("#if (1\n#endif\n" + K, "k.cl:1:7: expected ')' in #if, got the end of the line"),
    ("#if 1 2\n#endif\n" + K, "k.cl:1:7: unexpected '2' in #if (expected an operator or "
                              "the end of the line)"),
    ("#if x = 1\n#endif\n" + K, "k.cl:1:7: unexpected '=' in #if (expected an operator or "
                                "the end of the line)"),
    ("#if 1 ? 2\n#endif\n" + K, "k.cl:1:10: expected ':' in #if, got the end of the line"),
    ("#if 0\n#elif 4 / (2 - 2)\n#endif\n" + K, "k.cl:2:9: division by zero in #elif"),
    ("#if 1 % 0\n#endif\n" + K, "k.cl:1:7: division by zero in #if"),
    ("#if 1 << 64\n#endif\n" + K, "k.cl:1:7: shift count 64 out of range in #if"),
    ("#if 2.5\n#endif\n" + K, "k.cl:1:5: floating-point constant '2.5' in #if: only "
                              "integer constant expressions are allowed"),
    ("#define F 1.5f\n#if F > 1\n#endif\n" + K,
     "k.cl:2:5: floating-point constant '1.5f' in #if: only integer constant expressions "
     "are allowed (in the expansion of macro F)"),
    ("#if 099\n#endif\n" + K, "k.cl:1:5: invalid octal literal '099' in #if"),
    ("#if 'a'\n#endif\n" + K, "k.cl:1:5: expected an expression in #if, got \"'\""),
    ("#if defined\n#endif\n" + K, "k.cl:1:12: 'defined' needs a macro name in #if, got the "
                                  "end of the line"),
    ("#if defined(A\n#endif\n" + K, "k.cl:1:14: expected ')' after 'defined(A' in #if, got "
                                    "the end of the line"),
    ("#ifdef\n#endif\n" + K, "k.cl:1:7: #ifdef needs a macro name"),
    ("#ifndef 3\n#endif\n" + K, "k.cl:1:9: #ifndef needs a macro name"),
    ("#undef\n" + K, "k.cl:1:7: #undef needs a macro name"),
    ("#undef defined\n" + K, "k.cl:1:8: cannot #undef 'defined'"),
    ("#define defined 1\n" + K, "k.cl:1:9: cannot #define the keyword 'defined'"),
    ("#define SQ(x) ((x)*(x))\n" + K, "k.cl:1:9: function-like macros are not supported "
                                      "(SQ(...))"),
    ("#include <foo.h>\n" + K, "k.cl:1:1: preprocessor directive '#include' is not "
                               "supported"),
    ("#ifdef A\n#else\n  #include \"b.h\"\n#endif\n" + K,
     "k.cl:3:3: preprocessor directive '#include' is not supported"),
    ("#ident \"x\"\n" + K, "k.cl:1:1: preprocessor directive '#ident' is not supported"),
    ("#if 1\n#error stop here\n#endif\n" + K, "k.cl:2:1: #error stop here"),
    ("#define N 1\n\n#define N \\\n  2\n" + K, "k.cl:3:9: macro N redefined (first defined "
                                              "on line 1)"),
    ("#if " + "(" * (MAX_IF_DEPTH + 1) + "1" + ")" * (MAX_IF_DEPTH + 1) + "\n#endif\n" + K,
     f"k.cl:1:{4 + MAX_IF_DEPTH + 1}: #if expression nested too deeply"),
]


@pytest.mark.parametrize("source, message", ERRORS)
def test_errors_are_positioned(source, message):
    assert error(source) == message


def test_an_exponential_if_expression_is_an_error_not_a_hang():
    blowup = "#define M0 1\n" + "".join(f"#define M{i + 1} (M{i} + M{i})\n" for i in range(40))
    message = error(blowup + "#if M40\n#endif\n" + K)
    assert message.startswith("k.cl:42:5: the #if expression is too large after macro "
                              "expansion")


# -- the CLI -----------------------------------------------------------------------------

def test_predict_passes_build_options(tmp_path, capsys):
    from pathlib import Path

    profile = next((Path(__file__).resolve().parent.parent / "data" / "profiles").glob(
        "*h100*-opencl-poppl-herz.json"))
    src = "#ifndef TILE\n#define TILE 4\n#endif\n" + LOOP.replace("N", "TILE")
    kernel = tmp_path / "k.cl"
    kernel.write_text(src)
    fixed = tmp_path / "fixed.cl"
    fixed.write_text("#define TILE 16\n" + LOOP.replace("N", "TILE"))
    launch = ["--profile", str(profile), "--global-size", "1024", "--json"]

    def table(path, *extra):
        assert main(["predict", str(path), *launch, *extra]) == 0
        return json.loads(capsys.readouterr().out)["table"]

    with_option = table(kernel, "--build-options", "-D TILE=16 -cl-mad-enable")
    assert with_option == table(fixed) != table(kernel)
    assert table(kernel, "--build-options=-DTILE=16") == with_option
    assert main(["predict", str(kernel), *launch, "--build-options=-D"]) != 0
    assert "malformed build option '-D'" in capsys.readouterr().err


# -- on PoCL: the options select what runs, and the counts match it ---------------------

def _run(pocl_device, source: str, options: str, outputs, global_size: int = 8):
    """Build ``source`` with ``options`` on PoCL, run kernel k over ``global_size``
    work-items with a float input a[i] = i + 1 and zeroed outputs (name -> dtype); the
    outputs' contents."""
    import pyopencl as cl

    platform = next(p for p in cl.get_platforms() if p.name.strip() == pocl_device.platform)
    context = cl.Context([platform.get_devices()[pocl_device.index]])
    queue = cl.CommandQueue(context)
    program = cl.Program(context, source).build(options=options)
    a = np.arange(1, global_size + 1, dtype=np.float32)
    mf = cl.mem_flags
    bufs = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)]
    hosts = {name: np.zeros(global_size, dtype=dtype) for name, dtype in outputs.items()}
    bufs += [cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=h)
             for h in hosts.values()]
    program.k(queue, (global_size,), None, *bufs)
    for name, h in hosts.items():
        cl.enqueue_copy(queue, h, bufs[1 + list(hosts).index(name)])
    queue.finish()
    return hosts


TILED = """#ifndef TILE
#define TILE 8
#endif
#if TILE > 8 && !defined(SLOW)
#  define STEP 2
#else
#  define STEP 1
#endif
__kernel void k(__global const float *a, __global float *out, __global int *trips,
                __global int *muls) {
    int x = get_global_id(0);
    float acc = 0.0f;
    for (int i = 0; i < TILE; i += STEP) {
#ifdef SQUARE
        acc += a[x] * a[x];
        muls[x] += 1;
#else
        acc += a[x];
#endif
        trips[x] += 1;
    }
    out[x] = acc;
}
"""


@pytest.mark.parametrize("options", ["", "-D TILE=16", "-DTILE=16 -D SLOW -cl-mad-enable",
                                     "-D TILE=5 -D SQUARE", "-D SQUARE -DTILE=12"])
def test_the_selected_loop_runs_as_counted_on_pocl(pocl_device, options):
    ran = _run(pocl_device, TILED, options, {"out": np.float32, "trips": np.int32,
                                             "muls": np.int32})
    c = counts(TILED, options)
    trips = ran["trips"]
    assert (trips == trips[0]).all() and trips[0] > 0
    assert c.ops["add:float"] == trips[0]  # acc += ... once per iteration
    assert c.ops.get("mul:float", 0) == ran["muls"][0]
    reads = sum(a.count for a in c.access_list if a.array == "a")
    assert reads == trips[0] * (2 if "SQUARE" in options else 1)
    a = np.arange(1, 9, dtype=np.float32)
    assert np.allclose(ran["out"], trips[0] * (a * a if "SQUARE" in options else a))


VARIANTS = """#define SCALE \\
    (2.0f)
__kernel void k(__global const float *a, __global float *out, __global int *adds,
                __global int *muls) {
    int x = get_global_id(0);
    float v = a[x];
#if VARIANT == 1
    v = v * SCALE;
    muls[x] += 1;
#elif VARIANT == 2
    v = v * SCALE + 1.0f;
    muls[x] += 1;
    adds[x] += 1;
#elif defined(BOTH) && VARIANT >= 3
    for (int i = 0; i < VARIANT; i++) {
        v = v * SCALE + 1.0f;
        muls[x] += 1;
        adds[x] += 1;
    }
#else
    v = v + 1.0f + 2.0f * a[0];
    muls[x] += 1;
    adds[x] += 2;
#endif
    out[x] = v;
}
"""


@pytest.mark.parametrize("options", ["-D VARIANT=1", "-D VARIANT=2", "-D VARIANT=4 -D BOTH",
                                     "-D VARIANT=4", ""])
def test_the_selected_branch_of_an_elif_chain_runs_as_counted_on_pocl(pocl_device, options):
    ran = _run(pocl_device, VARIANTS, options, {"out": np.float32, "adds": np.int32,
                                                "muls": np.int32})
    c = counts(VARIANTS, options)
    assert c.ops.get("mul:float", 0) == ran["muls"][0]
    assert c.ops.get("add:float", 0) == ran["adds"][0]
    assert (ran["muls"] == ran["muls"][0]).all() and (ran["adds"] == ran["adds"][0]).all()


REDEFINED = """__kernel void k(__global const float *a, __global float *out, __global int *first,
                __global int *second) {
    int x = get_global_id(0);
    float acc = a[x];
#define N 3
    for (int i = 0; i < N; i++) { acc = acc * 2.0f; first[x] += 1; }
#undef N
#ifdef LONG
#  define N \\
      (LONG * 2)
#else
#  define N 5
#endif
    for (int i = 0; i < N; i++) { acc = acc + 1.0f; second[x] += 1; }
    out[x] = acc;
}
"""


@pytest.mark.parametrize("options", ["", "-D LONG=6", "-DLONG"])
def test_undef_and_redefine_inside_a_kernel_run_as_counted_on_pocl(pocl_device, options):
    ran = _run(pocl_device, REDEFINED, options, {"out": np.float32, "first": np.int32,
                                                 "second": np.int32})
    c = counts(REDEFINED, options)
    first, second = ran["first"][0], ran["second"][0]
    assert (first, c.ops["mul:float"]) == (3, 3)
    assert c.ops["add:float"] == second == {"": 5, "-D LONG=6": 12, "-DLONG": 2}[options]
    a = np.arange(1, 9, dtype=np.float32)
    assert np.allclose(ran["out"], a * 2 ** first + second)
