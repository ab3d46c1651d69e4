"""The GROPHECY skeleton front-end: the paper's skeletons parse to the facts the paper
states, and every malformed input raises SkeletonError at its exact position."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kernelcast.errors import UsageError
from kernelcast.frontends.skeleton import (Affine, Assign, Comp, Indirect, Loop, SkeletonError,
                                           load_skeleton, parse_skeleton, read_sample)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "skeletons"


def counts(kernel):
    return Counter((a.kind, a.array) for a in kernel.accesses())


def aff(**terms):
    const = terms.pop("const", 0)
    return Affine(tuple(sorted(terms.items())), const)


def test_matmul_listing_2():
    s = load_skeleton(EXAMPLES / "matmul.sk")
    assert [(a.name, a.dtype, a.dims) for a in s.arrays] == [
        ("A", "float", (800, 400)), ("B", "float", (400, 800)), ("C", "float", (800, 800))]
    (k,) = s.kernels
    assert (k.dims, k.indices) == ((800, 800), ("i", "j"))
    assert counts(k) == {("ld", "A"): 1, ("ld", "B"): 1, ("st", "C"): 1}
    comp1, loop, comp5, store = k.body
    assert (comp1.count, comp5.count) == (1, 5)
    assert (loop.kind, loop.index, loop.bound_kind, loop.hint, loop.trip_count) == (
        "stream", "k", "macro", None, 400)
    ld_a, ld_b, comp3 = loop.body
    assert ld_a.indices == (aff(i=1), aff(k=1)) and ld_b.indices == (aff(k=1), aff(j=1))
    assert comp3.count == 3 and store.indices == (aff(i=1), aff(j=1))
    assert (ld_a.line, ld_a.column) == (26, 5)  # line 26 of matmul.sk
    assert s.array("A").elem_bytes == 4


def test_matmul_defines_rescale():
    s = load_skeleton(EXAMPLES / "matmul.sk", defines={"N": 64, "K": 32})
    assert s.array("A").dims == (64, 32) and s.array("C").dims == (64, 800)
    assert s.kernels[0].loops()[0].trip_count == 32 and s.macro("N") == 64


def test_hotspot():
    s = load_skeleton(EXAMPLES / "hotspot.sk")
    assert s.array("TIN").dims == (514, 514) and s.kernels[0].dims == (512, 512)
    k = s.kernels[0]
    assert counts(k) == {("ld", "POWER"): 1, ("ld", "TIN"): 1, ("st", "TOUT"): 1}
    outer, = k.loops()[:1]
    inner = k.loops()[1]
    assert [(l.kind, l.bound_kind, l.trip_count) for l in (outer, inner)] == [
        ("for", "constant", 3), ("for", "constant", 3)]
    assert inner.body[0].indices == (aff(i=1, di=1), aff(j=1, dj=1))


@pytest.mark.parametrize("name,cols,b_loads,c_stores,comp", [
    ("ispinex_complex.sk", 2048, 2, 2, 22), ("ispinex_real.sk", 4096, 1, 1, 11)])
def test_ispinex_listings_4_and_5(name, cols, b_loads, c_stores, comp):
    s = load_skeleton(EXAMPLES / name)
    assert [a.name for a in s.arrays] == ["J", "I", "T", "B", "C"]
    assert s.array("J").dims == (133,) and s.array("I").dims == (1848,)
    assert s.array("J").dtype == "int" and s.array("B").dims[:2] == (132, cols)
    assert s.array("B").rank == (3 if b_loads == 2 else 2)
    (k,) = s.kernels
    assert (k.dims, k.indices) == ((132, cols), ("j", "i"))
    assert counts(k) == {("ld", "J"): 2, ("ld", "T"): 1, ("ld", "I"): 1,
                         ("ld", "B"): b_loads, ("st", "C"): c_stores}
    (loop,) = k.loops()
    assert (loop.kind, loop.index, loop.bound_kind, loop.hint, loop.trip_count) == (
        "stream", "n", "data_dependent", 14, 14)
    assert loop.lower == Indirect("J", (aff(j=1),), via="begin")
    assert loop.upper == Indirect("J", (aff(j=1, const=1),), via="end")
    assigns = [s for s in loop.body if isinstance(s, Assign)]
    assert assigns == [Assign("r", Indirect("I", (aff(n=1),)), assigns[0].line, 9)]
    b = [a for a in k.accesses() if a.array == "B"]
    # all threads share the row r = I[n]; the column index i is affine (section 9.3)
    assert all(a.is_indirect and a.indices[0] == Indirect("I", (aff(n=1),), via="r")
               and a.indices[1] == aff(i=1) for a in b)
    assert [c.count for c in loop.body if isinstance(c, Comp)] == [comp]
    assert not any(a.is_indirect for a in k.accesses() if a.array != "B")


def test_spinflap_listing_6():
    s = load_skeleton(EXAMPLES / "spinflap.sk")
    assert s.array("M").dims == (512, 4) and s.array("M").sample == "spinflap_sample.txt"
    assert s.array("A").dims == (132, 2048, 2)
    (k,) = s.kernels
    assert (k.dims, k.indices) == ((132, 512), ("j", "i"))
    assert counts(k) == {("ld", "M"): 1, ("ld", "A"): 2, ("ld", "B"): 2, ("st", "C"): 2}
    assert [(l.kind, l.index, l.bound_kind, l.trip_count) for l in k.loops()] == [
        ("for", "n", "constant", 4)] * 2
    m = Indirect("M", (aff(i=1), aff(n=1)))
    for a in k.accesses():
        assert a.is_indirect == (a.array != "M")
        if a.array != "M":
            assert a.indices[:2] == (aff(j=1), m)
    sample = read_sample(s, "M")
    assert len(sample) == 2048 and sorted(sample) == list(range(2048))


def test_comments_and_layout_are_insignificant():
    a = parse_skeleton("#define N 8 float A[N] parallel_for(N):i{ld A[i] comp 2}")
    b = parse_skeleton("// line comment\n#define N 8\n/* block\n comment */ float A[N]\n"
                       "parallel_for(N)\n: i\n{\n  ld A[i] // load\n  comp /* c */ 2\n}\n")
    assert a.arrays[0].dims == b.arrays[0].dims == (8,)
    assert [type(x) for x in a.kernels[0].body] == [type(x) for x in b.kernels[0].body]


def test_macros_expressions():
    s = parse_skeleton("#define A 10\n#define B (A+2)*3/4\n#define C -B+1\nint X[B][A-1]\n"
                       "parallel_for(C+20):i{ ld X[2*i+1][A-2] for k = i:B { ld X[k][0] } }")
    assert s.macro("B") == 9 and s.macro("C") == -8 and s.array("X").dims == (9, 9)
    assert s.kernels[0].accesses()[0].indices == (aff(i=2, const=1), aff(const=8))
    assert s.kernels[0].loops()[0].bound_kind == "affine"


def test_error_string_and_class():
    with pytest.raises(SkeletonError) as info:
        parse_skeleton("float A[4]\nparallel_for(4) : i { ld B[i] }", path="x.sk")
    e = info.value
    assert isinstance(e, UsageError)
    assert (e.path, e.line, e.column) == ("x.sk", 2, 26)
    assert str(e) == "x.sk:2:26: undeclared array 'B'"


ERRORS = [
    # (text, line, column, message fragment)
    ("float A[4]\nparallel_for(4) : i { ld A[i][0] }", 2, 26, "index rank mismatch"),
    ("float A[N]\nparallel_for(4) : i { ld A[i] }", 1, 9, "undefined macro 'N'"),
    ("flaot A[4]\nparallel_for(4) : i { ld A[i] }", 1, 1, "unknown type 'flaot'"),
    ("float A[4]\nint A[2]\nparallel_for(4) : i { ld A[i] }", 2, 5, "duplicate declaration"),
    ("#define N 4\n#define N 5\nfloat A[4]", 2, 9, "duplicate declaration: 'N' is already a macro"),
    ("#define N 4\nfloat N[4]", 2, 7, "already a macro"),
    ("int J[5]\nfloat A[4]\nparallel_for(4) : i {\n  stream n = J[i]:J[i+1] {\n    ld A[n] }\n}",
     4, 3, "data-dependent bound"),
    ("int J[5]\nparallel_for(4) : i {\n  for n = 0:J[i] { }\n}", 3, 3, "no hint"),
    ("float A[4]\nparallel_for(4) : i { for k = 0:4 (hint:3) { } }", 2, 36, "known trip count"),
    ("float A[4]\nparallel_for(4) : i { ld A[q] }", 2, 28, "undefined name 'q'"),
    ("float A[4]\nparallel_for(4) : i { ld A[i*i] }", 2, 29, "not affine"),
    ("float A[4]\nparallel_for(4) : i { ld A[i/2] }", 2, 29, "not affine"),
    ("float A[4]\nparallel_for(4) : i { ld A[4] }", 2, 28, "out of bounds"),
    ("float A[4]\nparallel_for(4, 4) : i { }", 2, 22, "2 dimension(s) but 1 index"),
    ("float A[4]\nparallel_for(4) : i { comp i }", 2, 28, "comp count must be a constant"),
    ("float A[4]\nparallel_for(4) : i { comp -1 }", 2, 28, "must not be negative"),
    ("float A[0]", 1, 9, "at least 1"),
    ("#define N 4/0", 1, 12, "division by zero"),
    ("int M[4] : hints<sampel=\"m.txt\">", 1, 18, "unknown array hint 'sampel'"),
    ("float A[4]\nparallel_for(4) : i { ld A }", 2, 28, "expected '['"),
    ("float A[4]\nparallel_for(4) : i { ld A[i] ", 2, 31, "got end of input"),
    ("float A[4]\nparallel_for(4) : i { load A[i] }", 2, 28, "got 'A'"),
    ("float A[4] @", 1, 12, "unexpected character '@'"),
    ("float A[4] /* never closed\n", 1, 12, "unterminated comment"),
    ("int M[4] : hints<sample=\"m.txt>\n", 1, 25, "unterminated string"),
    ("float A[4]", 1, 11, "no parallel_for"),
    ("float A[4]\nparallel_for(4) : i { i = 3 }", 2, 23, "cannot assign to loop index"),
    ("float A[4]\nparallel_for(4) : i { for i = 0:2 { } }", 2, 27, "already a loop index"),
    ("float A[4]\nparallel_for(4) : i { ld A[A] }", 2, 28, "used without an index"),
    ("int M[4]\nfloat A[4]\nparallel_for(4) : i { ld A[M[i]+M[i]] }", 3, 32, "at most one data value"),
    ("float A[4]\nparallel_for(4) : i { stream k = 0:i (hint:0) { } }", 2, 44, "hint must be at least 1"),
]


@pytest.mark.parametrize("text,line,column,fragment", ERRORS)
def test_errors(text, line, column, fragment):
    with pytest.raises(SkeletonError) as info:
        parse_skeleton(text, path="bad.sk")
    e = info.value
    assert fragment in e.message, str(e)
    assert (e.line, e.column) == (line, column), str(e)
    assert str(e).startswith(f"bad.sk:{line}:{column}: ")


def test_expected_list_is_readable():
    with pytest.raises(SkeletonError) as info:
        parse_skeleton("float A[4]\nparallel_for(4) : i { ld A[i] ; }")
    assert str(info.value) == "<string>:2:31: unexpected character ';'"
    with pytest.raises(SkeletonError) as info:
        parse_skeleton("float A[4]\nparallel_for(4) : i { ld A[i] ) }")
    assert str(info.value) == ("<string>:2:31: expected one of 'comp', 'for', 'ld', "
                               "'st', 'stream', '}', a name, got ')'")


def test_load_errors(tmp_path):
    with pytest.raises(SkeletonError, match="cannot read the skeleton"):
        load_skeleton(tmp_path / "missing.sk")
    bad = tmp_path / "bad.sk"
    bad.write_bytes(b"float A[4]\nint \xff[3]\n")
    with pytest.raises(SkeletonError) as info:
        load_skeleton(bad)
    assert (info.value.line, info.value.column) == (2, 5)


def test_sample_errors(tmp_path):
    (tmp_path / "s.sk").write_text('int M[2][2] : hints<sample="m.txt">\n'
                                   'parallel_for(2) : i { ld M[i][0] }\n')
    (tmp_path / "m.txt").write_text("# comment\n0 1\n2 x\n")
    s = load_skeleton(tmp_path / "s.sk")
    with pytest.raises(SkeletonError) as info:
        read_sample(s, "M")
    assert (info.value.line, info.value.column) == (3, 3)
    (tmp_path / "m.txt").write_text("0 1 2\n")
    with pytest.raises(SkeletonError, match="holds 3 values, expected 4"):
        read_sample(s, "M")
    (tmp_path / "m.txt").write_text("0 1\n2 3 # last row\n")
    assert read_sample(s, "M") == (0, 1, 2, 3)


def test_ir_is_frozen():
    s = load_skeleton(EXAMPLES / "matmul.sk")
    with pytest.raises(AttributeError):
        s.arrays[0].name = "Z"
    assert isinstance(s.kernels[0].body[1], Loop)
    assert hash(s.kernels[0].body[1].lower) == hash(Affine())
