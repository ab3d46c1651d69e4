"""Random kernels after Pöppl & Herz: deterministic generation, the two sets' vocabularies,
int safety checked independently of the generator's interval arithmetic, the OpenCL and
Loopy twins agreeing with each other and with the NumPy reference on PoCL, a campaign that
stores the OpenCL source, and symbolic properties of the twins."""

import doctest
import random
import re
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kernelcast.errors import KernelcastError
from kernelcast.measure.arrays import array_specs, typed_kernel
from kernelcast.measure.campaign import run_campaign, suite_jobs
from kernelcast.measure.codegen import generate, generate_case
from kernelcast.measure.store import Store
from kernelcast.measure.verify import TOLERANCE, check_case, relative_error
from kernelcast.suites import random_kernels as rk
from kernelcast.suites.paper import get_suite

DOCS = Path(__file__).resolve().parent.parent / "docs" / "random-kernels.md"

FAST = {"runs": 6, "tolerance": 1.0, "progress": None}
INT32 = (-2 ** 31, 2 ** 31 - 1)


def _kernels(set_name, count, start=0):
    return [rk.random_kernel(set_name, i) for i in range(start, start + count)]


def _case(suite_name, index, n=None):
    """The suite's case of kernel *index*, at *n* if given."""
    suite = get_suite(suite_name)
    kclass = suite.classes[0]
    group = rk.drawn_group(suite_name.split("-")[1], index)
    case = next(c for c in kclass.cases(suite.name, 0) if c.variant == str(index)
                and c.group_size == group)
    return case if n is None else case.with_params({"n": n})


# {{{ generation

def test_a_kernel_depends_only_on_its_set_seed_and_index():
    first = rk.random_kernel("realistic", 17).opencl_source()
    later = rk.random_kernel("unrestricted", 3).opencl_source()
    rk.random_kernel.cache_clear()
    rk._tree.cache_clear()
    rk._header.cache_clear()
    # drawn again from scratch, in another order
    assert rk.random_kernel("unrestricted", 3).opencl_source() == later
    assert rk.random_kernel("realistic", 17).opencl_source() == first
    sources = {rk.random_kernel("realistic", i).expression for i in range(40)}
    assert len(sources) == 40
    # the CPU-sized kernel i is the GPU-sized kernel i at another N
    for set_name in rk.SETS:
        for i in range(20):
            gpu = rk.random_kernel(set_name, i)
            cpu = rk.random_kernel(set_name, i, cpu=True)
            assert gpu.tree is cpu.tree and gpu.group == cpu.group
            assert gpu.n in rk.GPU_SIZES and cpu.n in rk.CPU_SIZES
            assert gpu.group in rk.GROUP_SIZES[set_name]


def test_the_opencl_source_has_the_slides_shape():
    k = rk.random_kernel("realistic", 17, 1024)
    source = k.opencl_source()
    assert source.startswith("#define HEIGHT 1024\n#define WIDTH 1024\n"
                             "__kernel void random_realistic_17("
                             "__global const float *restrict matrix,\n"
                             "                                  __global const float "
                             "*restrict xxx,\n"
                             "                                  __global float *restrict res)"
                             "\n{\n    int x = get_global_id(0);\n"
                             "    int y = get_global_id(1);\n    res[y * WIDTH + x] = ")
    assert source.endswith(f"res[y * WIDTH + x] = {k.expression};\n}}\n")
    assert k.name == "random_realistic_17" and (k.set, k.index, k.n) == ("realistic", 17, 1024)
    assert rk.random_kernel("realistic", 17, 256).expression == k.expression
    # balanced parentheses, float literals with an f suffix, masks and wraps as in the slides
    for kernel in _kernels("unrestricted", 30):
        text = kernel.expression
        assert text.count("(") == text.count(")")
        assert not re.search(r"\d+\.\d+(?!\d|f)", text)
        assert not re.search(r"xxx\[[^\]]*\](?<!& 0x7F\])", text)
        for access in re.findall(r"matrix\[[^\]]*\]", text):
            assert access in ("matrix[x * WIDTH + y]", "matrix[y * WIDTH + x]") or (
                "% HEIGHT) * WIDTH + (" in access and access.endswith("% WIDTH)]"))


def test_refuses_sizes_it_was_not_made_for():
    group = rk.drawn_group("realistic", 0)
    with pytest.raises(KernelcastError):
        rk.random_kernel("realistic", 0, 8192)
    with pytest.raises(KernelcastError):
        rk.random_kernel("realistic", 0, 3 * group[0] * group[1] + 1)
    with pytest.raises(KernelcastError):
        rk.random_kernel("tiny", 0)


def _index_nodes(node):
    return sum(1 for _ in rk.walk(node))


def test_the_realistic_set_keeps_its_limits_and_vocabulary():
    kernels = _kernels("realistic", 200)
    for k in kernels:
        assert 3 <= k.node_count <= 15 and k.depth <= 5
        for node in rk.value_nodes(k.tree):
            if isinstance(node, rk.Matrix):
                forms = (node.row, node.col)
                assert node.plain or all(isinstance(i, rk.IntLit) for i in forms)
            elif isinstance(node, rk.Lookup):
                assert _index_nodes(node.index) <= 3
                assert all(isinstance(i, (rk.Var, rk.IntLit, rk.BinOp))
                           for i in rk.walk(node.index))
    kinds = {(m.row.c(), m.col.c()) if m.plain else "literal" for k in kernels
             for m in rk.value_nodes(k.tree) if isinstance(m, rk.Matrix)}
    assert kinds == {("x", "y"), ("y", "x"), "literal"}


def test_the_unrestricted_set_grows_deeper_trees_and_complex_indices():
    realistic = _kernels("realistic", 200)
    unrestricted = _kernels("unrestricted", 200)
    depths = [k.depth for k in unrestricted]
    nodes = [k.node_count for k in unrestricted]
    assert statistics.mean(depths) > statistics.mean(k.depth for k in realistic) + 1.5
    assert max(depths) == 10 and statistics.median(depths) >= 6
    assert sum(n > 15 for n in nodes) > 100
    complex_matrix = complex_lookup = 0
    for k in unrestricted:
        for node in rk.value_nodes(k.tree):
            if isinstance(node, rk.Matrix) and not node.plain and any(
                    isinstance(i, rk.BinOp) for i in node.children):
                complex_matrix += 1
            if isinstance(node, rk.Lookup) and _index_nodes(node.index) > 3:
                complex_lookup += 1
    assert complex_matrix > 50 and complex_lookup > 50


def _c_int(node, x, y, n, problems, where):
    """An int tree's value as C computes it (Python ints, truncating /), recording every
    value or operand that C could get wrong."""
    if isinstance(node, rk.Var):
        return x if node.name == "x" else y
    if isinstance(node, rk.IntLit):
        return node.value
    a = _c_int(node.left, x, y, n, problems, where)
    b = _c_int(node.right, x, y, n, problems, where)
    if node.op in "/%":
        if a < 0 or b <= 0:
            problems.append((where, node.c(), a, b))
            return 0
        value = a // b if node.op == "/" else a % b
    else:
        value = {"+": a + b, "-": a - b, "*": a * b}[node.op]
    limit = (-rk.EXACT_INT, rk.EXACT_INT) if where == "value" else INT32
    if not limit[0] <= value <= limit[1]:
        problems.append((where, node.c(), value))
    return value


def _int_roots(node):
    """(where, int tree) for the int trees of a kernel: maximal int value subtrees and
    every array index (``"matrix"`` indices must stay non-negative)."""
    if node.dtype == "int":
        yield "value", node
        return
    if isinstance(node, rk.Matrix):
        if not node.plain:
            yield "matrix", node.row
            yield "matrix", node.col
    elif isinstance(node, rk.Lookup):
        yield "lookup", node.index
    else:
        for child in node.children:
            yield from _int_roots(child)


def test_int_expressions_stay_defined_in_c():
    """Independently of the generator's intervals: corners and sampled work-items, at the
    largest N and the check size, for 300 kernels of each set."""
    rng = random.Random(5)
    checked = 0
    for set_name in rk.SETS:
        for k in _kernels(set_name, 300):
            for n in (rk.N_MAX, rk.CHECK_N):
                points = [(0, 0), (0, n - 1), (n - 1, 0), (n - 1, n - 1)]
                points += [(rng.randrange(n), rng.randrange(n)) for _ in range(12)]
                for where, root in _int_roots(k.tree):
                    for x, y in points:
                        problems = []
                        value = _c_int(root, x, y, n, problems, where)
                        if where == "matrix" and value < 0:
                            problems.append(("matrix index < 0", root.c(), value))
                        assert not problems, (k.name, problems)
                        checked += 1
    assert checked > 10000


def test_float_literals_are_exact_float32_values():
    for k in _kernels("unrestricted", 50):
        for node in rk.walk(k.tree):
            if isinstance(node, rk.FloatLit):
                assert float(np.float32(node.text)) == node.value
                assert "." in node.text and "e" not in node.text
                assert not node.value.is_integer()


def test_the_twin_holds_no_float_constant_equal_to_an_int():
    """Loopy's mappers cache by expression equality: a value's ``(-1)*1.0`` once replaced
    an index's ``(-1)*1`` (kernel unrestricted 397: "Non-integral array indices")."""
    def constants(expr):  # no mapper: those cache by equality, which is the point here
        if isinstance(expr, (int, float, np.number)):
            yield expr
            return
        for name in ("children", "numerator", "denominator", "index", "child"):
            part = getattr(expr, name, None)
            if part is not None:
                yield from (c for p in (part if isinstance(part, tuple) else (part,))
                            for c in constants(p))

    found = [c for set_name in rk.SETS for k in _kernels(set_name, 100)
             for c in constants(rk._pymbolic_value(k.tree, 256))]
    assert sum(isinstance(c, np.float32) for c in found) > 100
    assert sum(isinstance(c, int) for c in found) > 100
    assert not [c for c in found
                if isinstance(c, (float, np.floating)) and float(c).is_integer()]
    generate(rk.random_kernel("unrestricted", 397).loopy_kernel())


def test_the_reference_computes_as_c_does():
    """Int division truncates before a float operation converts; a float operand makes
    the whole operation float; a float literal is float32."""
    x, y = rk.Var("int", 0, 255, "x"), rk.Var("int", 0, 255, "y")
    three = rk.IntLit("int", 3, 3, 3)
    half = rk.FloatLit("float", 1.5, 1.5, 1.5, "1.5")
    quotient = rk.BinOp("int", 0, 85, "/", x, three)
    tree = rk.BinOp("float", 0, 1e9, "*", quotient, half)
    mixed = rk.BinOp("float", 0, 1e9, "/", x, half)
    grid = np.arange(256)
    got = rk.evaluate(tree, grid, 0, 256, np.ones((256, 256)), np.ones(128))
    assert got.dtype == np.float32
    assert np.array_equal(got, (grid // 3).astype(np.float32) * np.float32(1.5))
    got = rk.evaluate(mixed, grid, 0, 256, np.ones((256, 256)), np.ones(128))
    assert np.array_equal(got, grid.astype(np.float32) / np.float32(1.5))

# }}}


# {{{ the twins on PoCL

def _run(pocl, generated, knl, params, seed=3):
    specs, _ = array_specs(typed_kernel(knl), params)
    compiled = pocl.compile(generated)
    return pocl.run_once(compiled, generated, specs, {}, params, seed)


def _body(code):
    return code[code.index("__kernel"):]


def test_the_twins_agree_with_each_other_and_the_reference_on_pocl(pocl):
    """Ten kernels of each set (each twin a PoCL build of a third of a second on a cold
    cache); every kernel's properties are checked below."""
    for set_name in rk.SETS:
        suite = f"random-{set_name}-cpu"
        for index in range(10):
            case = _case(suite, index, rk.CHECK_N)
            kernel = rk.random_kernel(set_name, index, rk.CHECK_N)
            knl = case.kernel()
            assert knl.default_entrypoint.name == kernel.name
            loopy_code = generate(knl, "opencl")
            opencl = generate_case(knl, "opencl", case)
            assert opencl.code == kernel.opencl_source()
            assert opencl.arguments == loopy_code.arguments and opencl.name == kernel.name
            assert [a.name for a in opencl.arguments] == ["matrix", "xxx", "res"]
            assert opencl.launch_sizes(case.params) == (
                (rk.CHECK_N // kernel.group[0], rk.CHECK_N // kernel.group[1]),
                kernel.group)
            assert not re.search(r"\bif\b|\?", _body(loopy_code.code))  # no guards
            ran_loopy = _run(pocl, loopy_code, knl, case.params)
            ran_opencl = _run(pocl, opencl, knl, case.params)
            assert np.array_equal(ran_loopy["matrix"], ran_opencl["matrix"])
            expected = case.reference(ran_opencl)["res"]
            assert relative_error(ran_opencl["res"], expected) <= TOLERANCE["float32"]
            assert relative_error(ran_loopy["res"], expected) <= TOLERANCE["float32"]
            # the same float operations in the same order: bit-identical on PoCL
            assert np.array_equal(ran_loopy["res"], ran_opencl["res"]), kernel.name


def test_the_loopy_twin_keeps_c_order_and_conversions(pocl):
    """A hand-made tree with what Loopy prints differently from C unless told: right
    nested sums and products, int subtrees under float operations, int / and %."""
    x, y = rk.Var("int", 0, 4095, "x"), rk.Var("int", 0, 4095, "y")
    m_xy = rk.Matrix("float", 0.5, 1.5, x, y)
    m_yx = rk.Matrix("float", 0.5, 1.5, y, x)
    lut = rk.Lookup("float", 0.5, 1.5, rk.BinOp("int", 0, 8190, "+", x, y))
    lit = rk.FloatLit("float", 1000.5, 1000.5, 1000.5, "1000.5")

    def f(op, a, b):
        return rk.BinOp("float", -1e9, 1e9, op, a, b)

    def i(op, a, b, lo, hi):
        return rk.BinOp("int", lo, hi, op, a, b)

    seven = rk.IntLit("int", 7, 7, 7)
    tree = f("-",
             f("+", f("+", m_xy, lit), f("+", lut, m_yx)),  # (a + b) + (c + d)
             f("+", f("*", f("*", m_xy, lut), f("*", m_yx, lit)),  # (a * b) * (c * d)
               f("+", f("*", i("/", x, seven, 0, 585), lit),  # (x / 7) * 1000.5f
                 f("+", m_xy, i("-", i("%", y, seven, 0, 6), x, -4095, 6)))))
    kernel = rk.RandomKernel("check", 0, (32, 8), 256, tree)
    knl = kernel.loopy_kernel()
    loopy_code = generate(knl, "opencl")
    opencl = replace(loopy_code, code=kernel.opencl_source())
    params = {}
    ran_loopy = _run(pocl, loopy_code, knl, params)
    ran_opencl = _run(pocl, opencl, knl, params)
    expected = kernel.reference(ran_opencl)["res"]
    assert relative_error(ran_opencl["res"], expected) <= 1e-6
    assert np.array_equal(ran_loopy["res"], ran_opencl["res"])
    body = _body(loopy_code.code)
    assert "(float) (" in body and " / 7" in body and " % 7" in body


def test_a_suite_case_passes_its_full_check_on_pocl(pocl):
    for suite, index in (("random-realistic-cpu", 5), ("random-unrestricted-cpu", 5)):
        case = _case(suite, index)
        errors = check_case(case.check_case(), pocl)
        assert errors["res"] <= TOLERANCE["float32"]


def test_a_campaign_times_the_opencl_source(pocl, tmp_path):
    suite = get_suite("random-realistic-cpu")
    cases = suite.cases()
    assert len(cases) == rk.COUNT
    picked = [next(c for c in cases if c.params["n"] == 512),
              next(c for c in cases if c.params["n"] == 256)]
    with Store(tmp_path / "random.sqlite", pocl.identity) as store:
        result = run_campaign(suite_jobs(picked), pocl, store, **FAST)
        rows = store.rows()
        codes = [store.code(r["code_sha256"]) for r in rows]
    assert result.statuses == {"ok": 2}
    for row, case, code in zip(rows, picked, codes, strict=True):
        assert row["status"] == "ok" and row["suite"] == "random-realistic-cpu"
        kernel = rk.random_kernel("realistic", int(case.variant), case.params["n"])
        assert code == kernel.opencl_source()
        assert row["group_size"] == list(kernel.group)

# }}}


# {{{ suites and properties

def test_the_suites_have_one_case_per_kernel():
    for set_name in rk.SETS:
        for cpu in (False, True):
            name = f"random-{set_name}" + ("-cpu" if cpu else "")
            suite = get_suite(name)
            (kclass,) = suite.classes
            assert kclass.name == "random" and kclass.sized_code and kclass.source
            assert kclass.group_sizes == rk.GROUP_SIZES[set_name]
            cases = suite.cases()
            assert [c.variant for c in cases] == [str(i) for i in range(rk.COUNT)]
            sizes = rk.CPU_SIZES if cpu else rk.GPU_SIZES
            assert {c.params["n"] for c in cases} == set(sizes)
            for case in cases[:5]:
                assert case.group_size == rk.drawn_group(set_name, int(case.variant))
                assert case.check_case().params == {"n": rk.CHECK_N}
                assert case.dtype == "float32"


def test_the_twins_have_symbolic_properties():
    from kernelcast.properties import extract_properties

    for set_name in rk.SETS:
        for index in range(20):
            kernel = rk.random_kernel(set_name, index, rk.CHECK_N)
            props = extract_properties(kernel.loopy_kernel())
            counts = props.evaluate({})
            assert counts["store_global_32_s1"] == rk.CHECK_N ** 2
            assert counts["launch"] == 1

# }}}


def test_the_docs_example_runs_as_written():
    result = doctest.testfile(str(DOCS), module_relative=False)
    assert result.attempted >= 4 and result.failed == 0


def test_the_twin_counts_the_operations_of_the_c_expression():
    """The parenthesizing wrappers and int-to-float casts count no operation."""
    from kernelcast.properties import extract_properties

    x, y = rk.Var("int", 0, 4095, "x"), rk.Var("int", 0, 4095, "y")
    m, lut = rk.Matrix("float", 0.5, 1.5, x, y), rk.Lookup("float", 0.5, 1.5, x)

    def f(op, a, b):
        return rk.BinOp("float", -1e9, 1e9, op, a, b)

    tree = f("-", f("*", f("+", f("+", m, lut), f("+", lut, m)),  # 3 adds, 1 mul
                    f("*", f("*", m, lut), f("*", lut, m))),  # 3 muls
             f("+", x, m))  # 2 adds (the subtraction and this sum), a free cast
    counts = extract_properties(rk.loopy_twin(tree, "counted", 256, (32, 8))).evaluate({})
    assert counts["add_f32"] == 5 * 256 ** 2 and counts["mul_f32"] == 4 * 256 ** 2


# {{{ GROPHECY skeletons

def _array_reads(tree):
    """The tree's array reads in source (pre-)order, found by walking it: (array, C index
    functions of (x, y, n)). Independent of skeleton_source."""
    reads = []
    for node in rk.walk(tree):
        if isinstance(node, rk.Matrix):
            def dim(sub, wrap=not node.plain):  # [x][y], [y][x] or [I % N][J % N]
                def at(x, y, n):
                    value = rk.evaluate(sub, x, y, n, None, None, exact=True)
                    return value % n if wrap else value
                return at
            reads.append(("matrix", (dim(node.row), dim(node.col)), (node.row, node.col)))
        elif isinstance(node, rk.Lookup):
            def lut(sub=node.index):
                return lambda x, y, n: (rk.evaluate(sub, x, y, n, None, None, exact=True)
                                        & 127)
            reads.append(("xxx", (lut(),), (node.index,)))
    return reads


def _float_ops(tree):
    return sum(1 for node in rk.walk(tree) if isinstance(node, rk.BinOp)
               and node.dtype == "float")


def _coordinates(node):
    return {n.name for n in rk.walk(node) if isinstance(n, rk.Var)}


@pytest.mark.parametrize("set_name", rk.SETS)
def test_the_skeleton_describes_the_tree(set_name):
    """Arrays, loads (in order, with the C index values where affine, the coordinates read
    where indirect), comp = float operations, the store and the loop space."""
    from kernelcast.frontends.skeleton import Affine, Indirect, parse_skeleton

    rng = np.random.default_rng(0)
    for kernel in _kernels(set_name, 25):
        n = kernel.n
        skeleton = parse_skeleton(kernel.skeleton_source())
        floats = {a.name: a.dims for a in skeleton.arrays if a.dtype == "float"}
        assert floats == {"matrix": (n, n), "xxx": (128,), "res": (n, n)}
        assert all(a.dtype == "int" for a in skeleton.arrays if a.name not in floats)
        (pfor,) = skeleton.kernels
        assert pfor.dims == (n, n) and pfor.indices == ("y", "x")
        accesses = pfor.accesses()
        loads, store = accesses[:-1], accesses[-1]
        assert store.kind == "st" and store.array == "res"
        assert store.indices == (Affine({"y": 1}), Affine({"x": 1}))
        reads = _array_reads(kernel.tree)
        assert [(a.kind, a.array) for a in loads] == [("ld", r[0]) for r in reads]
        x, y = rng.integers(0, n, 64), rng.integers(0, n, 64)
        for access, (_, functions, nodes) in zip(loads, reads):
            for index, function, node in zip(access.indices, functions, nodes):
                if isinstance(index, Affine):
                    assert np.array_equal(index.value({"x": x, "y": y}), function(x, y, n))
                else:
                    assert isinstance(index, Indirect) and _coordinates(node)
                    assert {str(i) for i in index.indices} == _coordinates(node)
        comps = [s for s in pfor.body if type(s).__name__ == "Comp"]
        assert sum(c.count for c in comps) == _float_ops(kernel.tree)
        assert skeleton.macro("FLOPS") == _float_ops(kernel.tree) * n * n


def test_a_masked_index_of_the_coordinates_is_indirect_and_a_literal_one_constant():
    from kernelcast.frontends.skeleton import Affine, Indirect, parse_skeleton

    kernel = rk.random_kernel("unrestricted", 1)  # reads xxx[(x * x) & 0x7F], xxx[2 & 0x7F]
    assert "xxx[(x * x) & 0x7F]" in kernel.expression
    assert "xxx[2 & 0x7F]" in kernel.expression
    (pfor,) = parse_skeleton(kernel.skeleton_source()).kernels
    xxx = [a.indices[0] for a in pfor.accesses() if a.array == "xxx"]
    lookups = [n.index for n in rk.walk(kernel.tree) if isinstance(n, rk.Lookup)]
    assert len(xxx) == len(lookups)
    for index, node in zip(xxx, lookups):
        if _coordinates(node):
            assert isinstance(index, Indirect)
        else:
            assert index == Affine({}, node.value & 127)
    assert any(isinstance(i, Indirect) and [str(j) for j in i.indices] == ["x"]
               for i in xxx)


def test_the_grophecy_layout_is_the_launch():
    for set_name in rk.SETS:
        for kernel in _kernels(set_name, 20):
            layout = kernel.grophecy_layout()
            assert layout.block[::-1] == kernel.group  # parallel_for(...) : y, x
            assert layout.fold == (1, 1) and layout.stages == () and layout.cached == ()
            assert not layout.unroll


def test_grophecy_projects_the_launch_of_every_kind_of_kernel():
    from kernelcast.models.grophecy.model import GrophecyModel

    model = GrophecyModel(hardware="h100").fit()
    for set_name in rk.SETS:
        for kernel in _kernels(set_name, 20):
            workload = kernel.grophecy_workload()
            seconds = model.predict(workload, {})
            assert np.isfinite(seconds) and seconds > 0
            gx, gy = kernel.group
            assert model.details(workload, {})["layout"]["block"].startswith(f"{gy}×{gx} ")

# }}}
