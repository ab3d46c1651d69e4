"""The skeleton and OpenCL C front-ends refuse what they cannot count, in one line and in
seconds: runaway skeletons (macros that double, eight parallel dimensions, layout spaces
of millions), integers beyond 64 bits, division by a constant zero, loops whose counter
wraps before its bound, launches OpenCL cannot make; and what they accept predicts
finite, non-negative times."""

from __future__ import annotations

import json
import lzma
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from kernelcast.cli import main
from kernelcast.errors import UsageError
from kernelcast.frontends.opencl import OpenCLSourceError, count_kernel
from kernelcast.frontends.skeleton import SkeletonError, load_skeleton, parse_skeleton, read_sample

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 60  # a refusal or an accepted runaway-shaped skeleton takes a few seconds


def _project(path: Path, *extra: str) -> subprocess.CompletedProcess:
    """``kernelcast project PATH --hardware h100`` in a subprocess that may not run for
    ever (the old code did)."""
    return subprocess.run([sys.executable, "-m", "kernelcast", "project", str(path),
                           "--hardware", "h100", *extra],
                          capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)


def _one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("kernelcast: error: "), result.stderr
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr
    return lines[0]


def _doubling(op: str) -> str:
    lines = ["#define A1 2"] + [f"#define A{k} (A{k - 1}{op}A{k - 1})" for k in range(2, 41)]
    return "\n".join(lines + ["float X[16]", "parallel_for(16) : i {",
                              "  for k = 0:A40 { ld X[i] comp 1 }", "  st X[i]", "}", ""])


def _numbers(doc, path=""):
    """Every number of a JSON document, with its path (``.layouts[0].seconds``)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _numbers(value, f"{path}.{key}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _numbers(value, f"{path}[{i}]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path, doc


# {{{ 1. runaway skeletons


def test_macros_that_square_are_refused_at_the_overflow(tmp_path):
    sk = tmp_path / "square.sk"
    sk.write_text(_doubling("*"))
    line = _one_error_line(_project(sk))
    # A7 = A6*A6 = 2^32 * 2^32, the first value beyond 64 bits, line 7
    assert f"{sk}:7:" in line and "4294967296 * 4294967296 overflows 64-bit" in line


def test_macros_that_double_forty_times_project_in_seconds(tmp_path):
    sk = tmp_path / "double.sk"
    sk.write_text(_doubling("+"))  # A40 = 2^40 iterations of 16 tasks: within 64 bits
    result = _project(sk, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["layouts"][0]["seconds"] > 0
    for where, value in _numbers(doc):
        assert math.isfinite(value) and value >= 0, (where, value)


def test_an_eight_dimensional_parallel_for_is_refused(tmp_path):
    sk = tmp_path / "eight.sk"
    sk.write_text("float X[4][4][4][4][4][4][4][4]\n"
                  "parallel_for(4,4,4,4,4,4,4,4) : a,b,c,d,e,f,g,h {\n"
                  "  ld X[a][b][c][d][e][f][g][h] comp 1 st X[a][b][c][d][e][f][g][h] }\n")
    line = _one_error_line(_project(sk))
    assert f"{sk}:2:1: parallel_for has 8 dimensions; at most 3" in line


def test_a_layout_space_of_millions_is_refused_before_it_is_searched(tmp_path):
    sk = tmp_path / "arrays.sk"
    arrays = [f"A{a}" for a in range(16)]  # every one cacheable: 2^16 sets to cache
    sk.write_text("#define N 1024\n" + "".join(f"float {a}[N]\n" for a in arrays)
                  + "float O[N][N]\nparallel_for(N, N) : i, j {\n  stream k = 0:N {"
                  + "".join(f" ld {a}[k]" for a in arrays) + " comp 1 }\n  st O[i][j]\n}\n")
    line = _one_error_line(_project(sk))
    assert "the parallel_for of line 19 has more than 250000 layouts" in line
    assert "sets of cached arrays (A0, A1, A10, A11, A12, A13 and 10 more)" in line
    assert "--hints" in line


def test_thousands_of_statements_are_refused_at_the_first_one_too_many(tmp_path):
    sk = tmp_path / "long.sk"
    sk.write_text("float A[64][64]\nparallel_for(64, 64) : i, j {\n"
                  + "  ld A[i][j] comp 1\n" * 3000 + "}\n")
    line = _one_error_line(_project(sk))
    # statement 65 is the ld of the 33rd body line
    assert f"{sk}:35:3: the parallel_for of line 2 has 6000 statements, more than 64" in line


@pytest.mark.parametrize(("body", "where", "message"), [
    ("".join(f"for k{q} = 0:BIG {{ " for q in range(20)) + "ld A[i][j]" + " }" * 20,
     "4:31", "for loop 'k0' amounts to 1.89e+22 iterations over all tasks, more than"),
    ("comp BIG comp BIG", "4:31", "comp 4611686018427387904 amounts to 1.89e+22 "
                                  "instructions over all tasks"),
])
def test_counts_beyond_64_bits_are_refused(tmp_path, body, where, message):
    sk = tmp_path / "big.sk"  # the old code raised OverflowError (an internal error)
    sk.write_text("#define BIG 4611686018427387904\nfloat A[64][64]\n\n"
                  f"parallel_for(64, 64) : i, j {{ {body} }}\n")
    line = _one_error_line(_project(sk))
    assert f"{sk}:{where}: {message}" in line, line


def test_an_array_beyond_64_bit_addresses_is_refused():
    with pytest.raises(SkeletonError, match=r"^s.sk:1:30: array 'A' would hold 7.38e\+19 "
                                            r"bytes, more than 9223372036854775807"):
        parse_skeleton("float A[1152921504606846976][16]\n"
                       "parallel_for(4) : i { ld A[i][0] }", "s.sk")


def test_a_triangular_loop_is_counted_by_its_longest_trip():
    s = parse_skeleton("#define N 3037000499\nfloat A[N]\n"
                       "parallel_for(N) : i { for k = i:i+3037000499 { ld A[i] } }")
    assert s.kernels[0].loops()[0].bound_kind == "affine"  # N^2 < 2^63: accepted


# }}}


# {{{ 2. integers beyond 64 bits


def test_a_5000_digit_literal_is_one_line_with_its_position(tmp_path):
    sk = tmp_path / "lit.sk"
    sk.write_text(f"#define N {'7' * 5000}\nfloat A[4]\nparallel_for(4) : i {{ ld A[i] }}\n")
    line = _one_error_line(_project(sk))
    assert f"{sk}:1:11: integer 777777777777... (5000 digits) is too large: skeleton " \
           "integers are 64-bit, at most 9223372036854775807" in line


def test_the_largest_64_bit_integer_is_accepted_and_one_more_is_not():
    ok = parse_skeleton("#define N 9223372036854775807\nfloat A[4]\n"
                        "parallel_for(4) : i { ld A[i] }")
    assert ok.macro("N") == 2**63 - 1
    with pytest.raises(SkeletonError, match="1:11: integer 9223372036854775808 is too large"):
        parse_skeleton("#define N 9223372036854775808\nfloat A[4]\n"
                       "parallel_for(4) : i { ld A[i] }")


def test_a_huge_define_is_refused_without_printing_it():
    with pytest.raises(UsageError, match=r"^macro N is a 16610-bit integer; skeleton "
                                         r"integers are 64-bit"):
        parse_skeleton("float A[4]\nparallel_for(4) : i { ld A[i] }", defines={"N": 10**5000})


def test_a_huge_sample_value_is_refused_with_its_position(tmp_path):
    (tmp_path / "m.txt").write_text("0 1\n2 " + "9" * 5000 + "\n")
    sk = tmp_path / "s.sk"
    sk.write_text('int M[2][2] : hints<sample="m.txt">\nparallel_for(2) : i { ld M[i][0] }\n')
    with pytest.raises(SkeletonError, match=r"m.txt:2:3: value of 5000 digits is too large"):
        read_sample(load_skeleton(sk), "M")


def test_a_non_ascii_digit_in_a_sample_is_refused(tmp_path):
    (tmp_path / "m.txt").write_text("0 \u00b2\n")  # '²'.isdigit() holds, int('²') fails
    sk = tmp_path / "s.sk"
    sk.write_text('int M[2] : hints<sample="m.txt">\nparallel_for(2) : i { ld M[i] }\n')
    with pytest.raises(SkeletonError, match=r"m.txt:1:3: expected a non-negative integer"):
        read_sample(load_skeleton(sk), "M")


@pytest.mark.parametrize(("literal", "shown"), [
    ("7" * 5000, "777777777777... (5000 characters)"),
    ("0x" + "f" * 5000, "0xffffffffff... (5002 characters)"),
    ("18446744073709551616", "18446744073709551616"),
])
def test_an_opencl_literal_beyond_64_bits_is_one_line(literal, shown):
    src = f"__kernel void k(__global float *b) {{\n    b[0] = {literal};\n}}\n"
    with pytest.raises(OpenCLSourceError) as info:
        count_kernel(src, path="k.cl")
    assert str(info.value) == f"k.cl:2:12: integer literal '{shown}' is too large " \
                              "(more than 64 bits)"


def test_a_huge_token_in_a_syntax_error_is_named_not_quoted():
    with pytest.raises(SkeletonError) as info:
        parse_skeleton("float A[4] " + "9" * 5000 + "\nparallel_for(4) : i { ld A[i] }", "s.sk")
    assert str(info.value).endswith("got '999999999999999999999999999...' (5000 characters)")
    with pytest.raises(OpenCLSourceError) as info:
        count_kernel("__kernel void k(__global float *b) { b[0] = 1 " + "9" * 5000 + "; }",
                     path="k.cl")
    assert str(info.value).endswith("got '999999999999999999999999999...' (5000 characters)")


# }}}


# {{{ 3. OpenCL: division by a constant zero, loops that never end

KERNEL = """{define}__kernel void k(__global const float *a, __global float *b) {{
    int x = get_global_id(0);
    float s = 0.0f;
    {body}
    b[x] = s;
}}
"""


@pytest.mark.parametrize(("define", "body", "where", "message"), [
    ("", "s = a[x % 0];", "4:13", "remainder (%) by zero: the divisor is a constant 0"),
    ("#define Z 0\n", "s = a[x / Z];", "5:13", "division by zero: the divisor is a constant 0"),
    ("#define Z (4 - 4)\n", "x %= Z; s = a[x];", "5:7", "remainder (%) by zero"),
    ("", "for (uchar c = 0; c < 300; c++) { s += a[x]; }", "4:23",
     "the for loop over 'c' never ends: its counter is a uchar (0..255) and wraps around "
     "before 'c < 300' turns false"),
    ("", "for (uint i = 10; i >= 0; i--) { s += a[x]; }", "4:23",
     "the for loop over 'i' never ends: its counter is a uint (0..4294967295)"),
    ("", "for (int i = 0; i < 2147483647; i += 1024) { s += a[x]; }", "4:21",
     "its counter is an int (-2147483648..2147483647) and wraps around"),
    ("", "for (long i = 0; i < 4611686018427387904L; i++) "
         "{ for (long j = 0; j < 4; j++) { s += a[x]; } }", "4:55",
     "the for loop over 'j' makes the code in it run 1.84e+19 times per work-item"),
])
def test_opencl_refuses_what_c_leaves_undefined(define, body, where, message):
    with pytest.raises(OpenCLSourceError) as info:
        count_kernel(KERNEL.format(define=define, body=body), path="k.cl")
    assert str(info.value).startswith(f"k.cl:{where}: "), str(info.value)
    assert message in str(info.value)


def test_loops_that_reach_their_bound_are_counted():
    counts = count_kernel(KERNEL.format(define="", body=(
        "for (uchar c = 0; c < 255; c++) { s += a[x]; }\n"
        "    for (uint i = 10; i > 0; i--) { s += a[x]; }\n"
        "    for (int i = 0; i < 2147483647; i++) { s += a[x]; }")))
    assert counts.ops["add:float"] == 255 + 10 + 2147483647
    assert counts.loops == 3


def test_a_float_division_by_zero_is_ieee_and_accepted():
    counts = count_kernel(KERNEL.format(define="", body="s = a[x] / 0;"))
    assert counts.ops["div:float"] == 1


# }}}


# {{{ 4. launches OpenCL cannot make; 5. finite, non-negative predictions


@pytest.fixture(scope="module")
def poppl_herz(tmp_path_factory):
    """A poppl-herz profile fitted from the committed PoCL store."""
    from kernelcast.fitting.dataset import load_dataset
    from kernelcast.measure.store import Store
    from kernelcast.models.poppl_herz import PopplHerzModel
    from kernelcast.profile import save_profile

    folder = tmp_path_factory.mktemp("ph")
    store = folder / "poppl-herz.sqlite"
    store.write_bytes(lzma.open(ROOT / "data" / "pocl" / "poppl-herz.sqlite.xz").read())
    with Store(store) as opened:
        dataset = load_dataset(opened, "poppl-herz-cpu")
    path = folder / "ph.json"
    save_profile(PopplHerzModel().fit(dataset), path)
    return path


@pytest.fixture()
def scale_cl(tmp_path):
    path = tmp_path / "scale.cl"
    path.write_text("__kernel void k(__global const float *a, __global float *b) {\n"
                    "    int x = get_global_id(0);\n    b[x] = 2.0f * a[x];\n}\n")
    return path


@pytest.mark.parametrize(("flags", "message"), [
    (["--global-size", "64", "64", "64", "64"],
     "--global-size has 4 numbers; an OpenCL launch has 1 to 3 dimensions"),
    (["--global-size", "64", "64", "64", "64", "--local-size", "4", "4", "4", "4"],
     "--global-size has 4 numbers"),
    (["--global-size", "64", "64", "--local-size", "8"],
     "--local-size needs as many numbers as --global-size (2), got 1"),
    (["--global-size", "64", "--local-size", "128"],
     "the global size 64 is not a multiple of the local size 128 (dimension 0 of "
     "--global-size and --local-size)"),
])
def test_a_launch_opencl_cannot_make_is_refused(poppl_herz, scale_cl, capsys, flags, message):
    code = main(["predict", str(scale_cl), "--profile", str(poppl_herz), *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"kernelcast: error: {message}"), err
    assert len(err.splitlines()) == 1


def test_a_huge_global_size_is_refused_not_crashed(scale_cl, capsys):
    big = str(2**62)  # np.prod of these wrapped to 0 and an arange of 2^62 was tried
    code = main(["predict", str(scale_cl), "--model", "hong-kim", "--hardware", "h100",
                 "--global-size", big, big, big])
    err = capsys.readouterr().err.strip()
    assert code in (1, 2) and err.startswith("kernelcast: error: "), err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("profile", ["poppl-herz", "nvidia-h100-80gb-hbm3-opencl-extended"])
def test_random_kernels_predict_finite_non_negative_times(poppl_herz, tmp_path, capsys,
                                                          profile):
    from kernelcast.suites.random_kernels import SETS, random_kernel

    path = poppl_herz if profile == "poppl-herz" else ROOT / "data" / "profiles" / \
        f"{profile}.json"
    checked = 0
    for set_name in SETS:
        for index in range(12):
            k = random_kernel(set_name, index)
            source = tmp_path / f"{k.name}.cl"
            source.write_text(k.opencl_source())
            for size in ((k.n, k.n), k.group, (64 * k.n, 64 * k.n)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    code = main(["predict", str(source), "--profile", str(path), "--json",
                                 "--global-size", *map(str, size),
                                 "--local-size", *map(str, k.group)])
                out, err = capsys.readouterr()
                assert code == 0, err
                for where, value in _numbers(json.loads(out)):
                    assert math.isfinite(value), (k.name, size, where, value)
                    if where.startswith((".seconds", ".breakdown", ".transfer", ".table")):
                        assert value >= 0, (k.name, size, where, value)
                checked += 1
    assert checked == 2 * 12 * 3

# }}}
