"""The paper's properties of OpenCL C source (kernelcast.properties.opencl):
index values against PoCL running the same expressions, footprints against a brute-force
count, the stride classes on hand-written kernels, agreement with the Loopy twins of
random kernels, and `predict` on a .cl file with the fitted models."""

import itertools
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kernelcast.cli import main
from kernelcast.errors import UncountedWarning, UsageError
from kernelcast.frontends.opencl import count_kernel
from kernelcast.frontends.opencl.indices import index_values
from kernelcast.properties.opencl import opencl_properties
from kernelcast.suites.random_kernels import BinOp, FloatLit, IntLit, random_kernel

PROFILES = Path(__file__).resolve().parent.parent / "data" / "profiles"

# index expressions with C's corner cases: truncating division and remainder of negative
# values, unsigned wrap-around, shifts, narrow types, selections, built-ins, local and
# group ids
INDICES = [
    "x * 7 + y", "(x - 9) / 4", "(x - 9) % 4", "(y - x) / 3 + 40", "(uint)(x - 5) % 1000",
    "(x << 3) >> 1", "(-x) >> 2", "(x ^ y) & 31", "(x | 6) - (y & 3)", "~x + 100",
    "(uchar)(x * 37)", "(char)(x * 37)", "(short)(x * 3001)", "x < y ? x : y * 2",
    "min(x, y) + max(x - 3, 2)", "clamp(x - 5, 0, 9) + abs(y - 7)",
    "get_local_id(0) * 100 + get_group_id(0) + get_local_id(1) * 5 + get_group_id(1)",
    "get_global_size(0) * get_num_groups(1) + get_local_size(0) - x",
    "(x * y * 1103515245 + 12345) & 0xFFFF", "(x > 3) + (y == 2) * 2 + !(x - 4) * 4",
    "((unsigned int)x * 2654435761u) >> 20", "(long)x * 3000000000L % 1000003",
    "(int)(x * 0.5f)", "convert_int(floor(((float)x + 0.5f) * 1.5f - 0.5f)) + y",
    "(int)((float)y / 3.0f + x)", "(int)fmax((float)x - 3.7f, 0.25f) * 2",
    "(int)(sqrt((double)(x * y)) * 10.0)", "(int)ceil(x / 7.0f) - (int)(-x * 0.3f)",
]
GLOBAL, LOCAL = (24, 10), (8, 5)


def _pocl_values(pocl_device, exprs):
    """Each expression's value at every work-item, computed by PoCL."""
    import pyopencl as cl

    platform = next(p for p in cl.get_platforms() if p.name.strip() == pocl_device.platform)
    device = platform.get_devices()[pocl_device.index]
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    lines = [f"    out[{i} * N + y * {GLOBAL[0]} + x] = (long)({e});"
             for i, e in enumerate(exprs)]
    source = ("#define N %d\n__kernel void k(__global long *out) {\n"
              "    int x = get_global_id(0);\n    int y = get_global_id(1);\n%s\n}\n"
              % (GLOBAL[0] * GLOBAL[1], "\n".join(lines)))
    program = cl.Program(context, source).build()
    out = np.zeros(len(exprs) * GLOBAL[0] * GLOBAL[1], dtype=np.int64)
    buf = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    program.k(queue, GLOBAL, LOCAL, buf)
    cl.enqueue_copy(queue, out, buf)
    return out.reshape(len(exprs), GLOBAL[1], GLOBAL[0])


def test_index_values_match_pocl(pocl_device):
    expected = _pocl_values(pocl_device, INDICES)
    for i, expr in enumerate(INDICES):
        counts = count_kernel("__kernel void k(__global float *a) {\n"
                              "    int x = get_global_id(0);\n    int y = get_global_id(1);\n"
                              f"    a[0] = a[{expr}];\n}}\n")
        read = next(a for a in counts.access_list if a.direction == "read")
        got = index_values(counts.nodes, read.index, GLOBAL, LOCAL)
        assert got is not None, expr
        got = np.broadcast_to(got, (1, GLOBAL[1], GLOBAL[0]))[0]
        assert np.array_equal(got, expected[i]), expr


def test_indices_that_read_data_or_unknown_scalars_have_no_value():
    counts = count_kernel("__kernel void k(__global float *a, __global int *j, int n) {\n"
                          "    int x = get_global_id(0);\n"
                          "    a[x] = a[j[x]] + a[n * x] + a[(int)exp((float)x)];\n}\n")
    reads = [a for a in counts.access_list if a.array == "a" and a.direction == "read"]
    assert [index_values(counts.nodes, a.index, (64,), (8,)) for a in reads] == [None] * 3
    scaled = index_values(counts.nodes, reads[1].index, (64,), (8,), scalars={"n": 3})
    assert list(np.ravel(scaled)) == [3 * x for x in range(64)]


def _props(body, global_size=(64, 32), local_size=(16, 4), **kw):
    source = ("__kernel void k(__global const float *a, __global float *b, "
              "__global const double *d, int n) {\n"
              "    int x = get_global_id(0);\n    int y = get_global_id(1);\n"
              f"    {body}\n}}\n")
    return opencl_properties(source, global_size, local_size, **kw)


def _brute_utilization(indices, stride):
    """touched / (filled + stride - 1) over every work-item of the launch."""
    touched = {f(x, y) for f in indices for x in range(64) for y in range(32)}
    return Fraction(len(touched), max(touched) - min(touched) + 1 + abs(stride) - 1)


@pytest.mark.parametrize("body, expected", [
    ("b[y * 64 + x] = a[y * 64 + x];", {"load_global_32_s1": 2048}),
    ("b[y * 64 + x] = a[5] + a[y];", {"load_global_32_s0": 4096}),
    ("b[y * 64 + x] = a[x & 0x7F] + a[(x * y) % 64];", {"load_global_32_irregular": 4096}),
    ("b[y * 64 + x] = a[2 * x + 128 * y];", {"load_global_32_1of2": 2048}),
    ("b[y * 64 + x] = a[2 * x + 128 * y] + a[2 * x + 1 + 128 * y];",
     {"load_global_32_2of2": 4096}),
    ("b[y * 64 + x] = a[4 * x + 256 * y];", {"load_global_32_1of4": 2048}),
    ("b[y * 64 + x] = a[x * 32 + y];", {"load_global_32_4ofmore": 2048}),
    ("b[y * 64 + x] = a[x * 128 + y];", {"load_global_32_1ofmore": 2048}),
    ("b[y * 64 + x] = a[y * 64 + x] + a[y * 64 + x];", {"load_global_32_s1": 4096}),
    ("b[y * 64 + x] = (float)d[y * 64 + x];", {"load_global_64_s1": 2048}),
])
def test_stride_classes_of_hand_written_kernels(body, expected):
    """The paper's reading (a non-affine index is irregular, as Loopy's extraction
    classes a twin's); warp strides are tested below."""
    props = _props(body, warp_strides=False)
    values = props.evaluate({})
    loads = {k: v for k, v in values.items() if k.startswith("load_global")}
    assert loads == expected
    assert values["store_global_32_s1"] == 2048
    assert values["workgroup"] == 32 and values["launch"] == 1


@pytest.mark.parametrize("index, f, stride", [
    ("x * 3 + 200 * y", lambda x, y: 3 * x + 200 * y, 3),
    ("x * 32 + y", lambda x, y: 32 * x + y, 32),
    ("x * 128 + (y & 7)", lambda x, y: 128 * x + (y & 7), 128),
])
def test_utilization_is_the_brute_force_footprint(index, f, stride):
    props = _props(f"b[y * 64 + x] = a[{index}] + a[5000];")
    strided = next(a for a in props.accesses if a.stride == stride)
    assert strided.utilization == _brute_utilization([f, lambda x, y: 5000], stride)


@pytest.mark.parametrize("union_points", [1 << 22, 300, 70])
@pytest.mark.parametrize("loop, index, f", [
    ("for (int c = 0; c < 24; c++)", "x * 40 + 3 * c", lambda x, y, c: 40 * x + 3 * c),
    ("for (int c = y; c < 24; c += 5)", "x * 64 + c", lambda x, y, c: 64 * x + c),
    ("for (int c = 2; c < 24; c += 5)", "x * 64 + c", lambda x, y, c: 64 * x + c),
    ("for (int c = 0; c < 24; c++) if (c < x)", "x * 30 + c",
     lambda x, y, c: 30 * x + c if c < x else None),
])
def test_the_footprint_of_a_loop_is_every_pass_of_its_counter(loop, index, f,
                                                                 union_points, monkeypatch):
    """An index in a loop reaches what every value of the counter reaches (one work-item
    row's loop runs from its own y), whether counted at once or in chunks of the
    counter's values (the launch made small, so that its chunks are few values)."""
    import kernelcast.properties.opencl as module

    monkeypatch.setattr(module, "UNION_POINTS", union_points)
    props = _props(f"{loop} b[y * 64 + x] += a[{index}];", global_size=(64, 4),
                   local_size=(16, 4))
    start = {"c = y": lambda y: y, "c = 2": lambda y: 2}.get(loop[9:14], lambda y: 0)
    step = 5 if "c += 5" in loop else 1
    touched = {e for x in range(64) for y in range(4) for c in range(start(y), 24, step)
               if (e := f(x, y, c)) is not None}
    strided = next(a for a in props.accesses if a.array == "a")
    filled = max(touched) - min(touched) + 1 + abs(strided.stride) - 1
    assert strided.utilization == Fraction(len(touched), filled)
    assert props.extent({})["read a"] == 4 * (max(touched) + 1)


def test_operations_become_the_papers_flops():
    props = _props("b[y * 64 + x] = a[x] * 2.0f - a[x] / 3.0f + sqrt(a[y]) + "
                   "pow(a[x], 1.5f) + (float)(d[x] * 2.0 + 1.0) + -a[x] + (x * y > 3);")
    values = props.evaluate({})
    items = 64 * 32
    assert values["mul_f32"] == 2 * items  # * and unary -
    assert values["add_f32"] == 6 * items  # - and five +
    assert values["div_f32"] == values["special_f32"] == values["pow_f32"] == items
    assert values["mul_f64"] == values["add_f64"] == items


def test_array_sizes_come_from_the_indices_or_are_given():
    props = _props("b[y * 64 + x] = a[x & 0x7F] + a[x * 32 + y];")
    extent = props.extent({})
    assert extent["read a"] == 4 * (63 * 32 + 31 + 1)  # highest element + 1
    assert extent["written b"] == 4 * 64 * 32
    # a[x & 0x7F] in groups of 16 x 4: a warp touches 2 sectors (stride 0, a float a
    # lane); a[x * 32 + y]: a sector a lane
    assert extent["read a accessed"] == 64 * 32 * (4 + 32)
    paper = _props("b[y * 64 + x] = a[x & 0x7F] + a[x * 32 + y];", warp_strides=False)
    assert paper.extent({})["read a accessed"] == 2 * 4 * 64 * 32  # elements
    assert extent["work_items"] == 64 * 32
    given = _props("b[y * 64 + x] = a[x];", array_elements={"a": 10**6}).extent({})
    assert given["read a"] == 4 * 10**6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unknown = _props("b[y * 64 + x] = a[n * y + x];").extent({})
    assert unknown["read a"] == unknown["read a accessed"] == 4 * 64 * 32


def test_a_strided_access_with_an_unknown_footprint_is_irregular_with_a_warning():
    with pytest.warns(UncountedWarning, match="footprint"):
        props = _props("b[y * 64 + x] = a[x * 32 + n];")
    assert "load_global_32_irregular" in props.evaluate({})
    known = _props("b[y * 64 + x] = a[x * 32 + n];", scalars={"n": 7})
    assert "load_global_32_1ofmore" in known.evaluate({})  # one element in 32


def test_local_accesses_barriers_and_loads_with_stores_of_one_class():
    source = """__kernel void k(__global float *a) {
        __local float t[64];
        int x = get_global_id(0);
        t[get_local_id(0)] = a[x];
        barrier(CLK_LOCAL_MEM_FENCE);
        a[x] = t[63 - get_local_id(0)];
    }"""
    values = opencl_properties(source, (256,), (64,)).evaluate({})
    assert values["load_local_32"] == values["store_local_32"] == 256
    assert values["barrier"] == 256 and values["workgroup"] == 4
    assert values["minls_global_32_s1"] == 256


@pytest.mark.parametrize("source, global_size, local_size, message", [
    ("__kernel void k(__global float *a, __global const int *r) {\n"
     " for (int i = 0; i < 4; i++) a[r[get_global_id(0)] + i] = 0.0f; }",
     (64,), None, "the elements of array 'a' cannot be worked out"),
    ("__kernel void k(__global float *a) { a[get_global_id(1)] = 0.0f; }",
     (64,), None, "uses 2 dimensions"),
    ("__kernel void k(__global float *a) { a[get_global_id(0)] = 0.0f; }",
     (64,), (5,), "not a positive multiple"),
    ("__kernel void k(__global float *a) { a[get_global_id(0)] = 0.0f; }",
     (64, 2), (8,), "as many local sizes"),
])
def test_bad_launches_are_one_line_errors(source, global_size, local_size, message):
    with pytest.raises(UsageError, match=message) as info:
        opencl_properties(source, global_size, local_size)
    assert "\n" not in str(info.value)


def _folded(node) -> bool:
    """Whether the tree has an operation on literals alone (the front-end folds it as a
    compiler does; the Loopy twin counts it)."""
    if not isinstance(node, BinOp):
        return False
    literal = (FloatLit, IntLit)
    return (isinstance(node.left, literal) and isinstance(node.right, literal)) or \
        _folded(node.left) or _folded(node.right)


@pytest.mark.parametrize("set_name, index", [
    *itertools.product(["realistic"], range(6)), *itertools.product(["unrestricted"],
                                                                      range(4))])
def test_the_properties_of_random_kernels_are_their_loopy_twins(set_name, index):
    from kernelcast.properties import extract_properties

    group = random_kernel(set_name, index).group
    n = max(256, *group)  # a multiple of every work-group size
    kernel = random_kernel(set_name, index, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncountedWarning)
        twin = extract_properties(kernel.loopy_kernel())
        ours = opencl_properties(kernel.opencl_source(), (n, n), group, warp_strides=False)
    mine, theirs = ours.evaluate({}), twin.evaluate({})
    if _folded(kernel.tree):
        mine = {k: v for k, v in mine.items() if k.split("_")[1] not in ("f32", "f64")}
        theirs = {k: v for k, v in theirs.items() if k.split("_")[1] not in ("f32", "f64")}
    assert mine == theirs
    assert sorted((a.array, a.direction, a.stride_class) for a in ours.accesses) == \
        sorted((a.array, a.direction, a.stride_class) for a in twin.accesses)
    e, f = ours.extent({}), twin.extent({})
    assert e["work_items"] == f["work_items"]
    assert e["written res"] == f["written res"]
    for key in (k for k in f if k.endswith(" accessed")):
        assert e[key] == f[key], key


def test_predict_a_cl_file_with_the_fitted_models(tmp_path, capsys):
    kernel = tmp_path / "k.cl"
    kernel.write_text(random_kernel("realistic", 3, 1024).opencl_source())
    launch = ["--global-size", "1024", "1024", "--local-size", "32", "8"]
    for name in ("paper", "extended"):
        profile = next(PROFILES.glob(f"*h100*-opencl-{name}.json"))
        assert main(["predict", str(kernel), "--profile", str(profile), *launch]) == 0
        out = capsys.readouterr().out
        assert f"{name} model:" in out and "load_global_32_4ofmore" in out
    assert main(["predict", str(kernel), "--model", "hong-kim", "--hardware", "h100",
                 *launch, "--json"]) == 0
    assert '"estimate"' in capsys.readouterr().out
    profile = next(PROFILES.glob("*h100*-opencl-paper.json"))
    assert main(["predict", str(kernel), "--profile", str(profile), *launch,
                 "--bytes-in", "4"]) == 2
    assert "for the poppl-herz model" in capsys.readouterr().err


def _twin(domain, instruction, args, fixed, splits):
    import loopy as lp

    knl = lp.make_kernel(domain, instruction, args, lang_version=(2018, 2))
    knl = lp.fix_parameters(knl, **fixed)
    for iname, size, axis in splits:
        knl = lp.split_iname(knl, iname, size, outer_tag=f"g.{axis}", inner_tag=f"l.{axis}")
    return knl


@pytest.mark.parametrize("name", ["gemm", "syrk", "guarded scale"])
def test_loops_and_guards_give_the_properties_of_their_loopy_twins(name):
    """Loops bounded by arguments and by the work-item's position, recurrences and
    guards at the grid's edge: the properties of the OpenCL source in the paper's reading
    are those Loopy's extraction gives its twin (written to generate the same code)."""
    import loopy as lp

    from kernelcast.properties import extract_properties

    f32 = np.float32
    if name == "gemm":
        n = 128
        knl = _twin("{[i,j,k]: 0<=i,j,k<n}", "c[i,j] = sum(k, a[i,k]*b[k,j])",
                    [lp.GlobalArg("a,b,c", f32, shape=(n, n)), lp.ValueArg("n", np.int32)],
                    {"n": n}, [("i", 16, 1), ("j", 16, 0)])
        source = ("__kernel void mm(__global const float *a, __global const float *b,\n"
                  "                 __global float *c, int n) {\n"
                  "  int i = get_global_id(1); int j = get_global_id(0);\n"
                  "  float acc = 0.0f;\n"
                  "  for (int k = 0; k < n; k++) acc += a[i * n + k] * b[k * n + j];\n"
                  "  c[i * n + j] = acc;\n}\n")
        launch, scalars = ((n, n), (16, 16)), {"n": n}
    elif name == "syrk":
        n, m = 1000, 64
        knl = _twin("{[i,j,k]: 0<=i<n and 0<=j<=i and 0<=k<m}",
                    "c[i,j] = sum(k, a[i,k]*a[j,k])",
                    [lp.GlobalArg("a", f32, shape=(n, m)), lp.GlobalArg("c", f32, shape=(n, n)),
                     lp.ValueArg("n,m", np.int32)], {"n": n, "m": m}, [("i", 64, 0)])
        source = ("__kernel void syrk(__global const float *a, __global float *c, int n,\n"
                  "                   int m) {\n"
                  "  int i = get_global_id(0);\n"
                  "  if (i < n)\n"
                  "    for (int j = 0; j <= i; j++) {\n"
                  "      float acc = 0.0f;\n"
                  "      for (int k = 0; k < m; k++) acc += a[i * m + k] * a[j * m + k];\n"
                  "      c[i * n + j] = acc;\n"
                  "    }\n}\n")
        launch, scalars = ((1024,), (64,)), {"n": n, "m": m}
    else:
        n = 1000
        knl = _twin("{[i]: 0<=i<n}", "y[i] = 2.0f*x[i] + sqrt(x[i])",
                    [lp.GlobalArg("x,y", f32, shape=(n,)), lp.ValueArg("n", np.int32)],
                    {"n": n}, [("i", 64, 0)])
        source = ("__kernel void scale(__global const float *x, __global float *y, int n) {\n"
                  "  int i = get_global_id(0);\n"
                  "  if (i < n) y[i] = 2.0f * x[i] + sqrt(x[i]);\n}\n")
        launch, scalars = ((1024,), (64,)), {"n": n}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncountedWarning)
        twin = extract_properties(knl)
    ours = opencl_properties(source, *launch, scalars=scalars, warp_strides=False)
    assert ours.evaluate({}) == twin.evaluate({})
    e, f = ours.extent({}), twin.extent({})
    # the loads of the work-item that runs a varying loop longest are not counted
    # from source (0)
    assert {k: e[k] for k in f if k != "varying_global_loads"} == \
        {k: f[k] for k in f if k != "varying_global_loads"}


def test_predict_a_real_program_from_the_command_line(capsys):
    """A kernel of a real program, with its arguments, options, array lengths and a
    statistic for its data-dependent loop, through `kernelcast predict`: each model's
    prediction is the one the library makes from the same inputs."""
    import json

    from kernelcast.profile import load_profile
    from kernelcast.suites.opencl_programs import DIRECTORY, PROGRAMS

    launch = next(p for p in PROGRAMS if p.kernel == "spmv_csr" and p.size == "gpu")
    (line, trips), = launch.stats.items()
    argv = ["predict", str(DIRECTORY / launch.program), "--kernel-name", launch.kernel,
            "--global-size", *map(str, launch.global_size),
            "--local-size", *map(str, launch.local_size),
            "--arg", *(f"{k}={v}" for k, v in launch.scalars.items()),
            "--array", *(f"{a}={n}" for a, (_, n) in launch.arrays.items()),
            "--stat", f"{line}={trips}", "--json"]
    profile = next(PROFILES.glob("*h100*-opencl-extended.json"))
    assert main([*argv, "--profile", str(profile)]) == 0
    seconds = json.loads(capsys.readouterr().out)["seconds"]
    props = opencl_properties((DIRECTORY / launch.program).read_text(), launch.global_size,
                              launch.local_size, kernel=launch.kernel,
                              scalars=launch.scalars, stats=launch.stats,
                              array_elements={a: n for a, (_, n) in launch.arrays.items()})
    assert seconds == pytest.approx(load_profile(profile).predict(props, {}), rel=1e-12)
    assert main([*argv[:-3], "--json", "--model", "poppl-herz", "--device", "h100"]) == 2
    assert "the trip count of the loop over 'k' depends on data" in capsys.readouterr().err
    assert main([*argv, "--model", "poppl-herz", "--device", "h100"]) == 0
    assert json.loads(capsys.readouterr().out)["seconds"] > 0


@pytest.mark.parametrize("index, local, grid", [
    ("x & 0x7F", (128,), (1024,)), ("x & 0x7F", (64, 2), (256, 8)),
    ("(x / 64) * 128 + x % 64", (256,), (4096,)), ("x * 3 % 7", (64,), (512,)),
    ("(x % 4096) * 2", (32,), (8192,)), ("y * 64 + (x ^ 1)", (16, 16), (64, 64)),
    ("y * 64 + (x & 15)", (16, 16), (64, 64)), ("(x >> 5) + y", (32, 4), (128, 8)),
    ("(3 * x) / 2", (64,), (1024,)), ("x * 37 % 4096", (128,), (2048,)),
    ("(x * x) % 512", (32, 2), (64, 4)),
])
def test_warp_strides_are_what_the_lanes_of_each_warp_address(index, local, grid):
    """An index the affine analysis leaves irregular takes the step its warps' lanes
    share, checked against the lanes listed one by one: warps of 32 work-items of a
    group, local axis 0 fastest. Where no step is shared by 90% of the warps, the stride
    whose warp touches as many 32-byte sectors as the listed warps do on average."""
    from kernelcast.properties.opencl import warp_stride

    dims = len(grid)
    source = ("__kernel void k(__global const float *a, __global float *b) {\n"
              "    int x = get_global_id(0);" + (" int y = get_global_id(1);" if dims > 1
                                                  else " int y = 0;") +
              f"\n    b[0] = a[{index}];\n}}\n")
    counts = count_kernel(source, global_size=grid, local_size=local)
    access = next(a for a in counts.access_list if a.array == "a")
    lanes = []  # every work-item's element, in warp order
    groups = [range(g // l) for g, l in zip(grid, local)]
    for group in itertools.product(*reversed(groups)):
        group = group[::-1]
        for lid in itertools.product(*(range(n) for n in reversed(local))):
            lid = lid[::-1]
            x = group[0] * local[0] + lid[0]
            y = group[1] * local[1] + lid[1] if dims > 1 else 0
            lanes.append(eval(index.replace("/", "//"), {"x": x, "y": y}))
    warps = [lanes[i:i + 32] for i in range(0, len(lanes), 32)]
    steps = [{b - a for a, b in zip(w, w[1:])} for w in warps]
    shared = [s.pop() for s in steps if len(s) == 1]
    best = max(set(shared), key=shared.count) if shared else None
    if best is not None and shared.count(best) >= 0.9 * len(warps):
        expected = best
    else:  # 4-byte elements: a stride-s warp touches 4 s sectors
        sectors = sum(len({4 * e // 32 for e in w}) for w in warps) / len(warps)
        expected = round(sectors / 4)
    assert access.stride is None  # left irregular by the affine analysis
    assert warp_stride(counts, access, grid, local) == expected
    cls = next(a.stride_class for a in opencl_properties(source, grid, local).accesses
               if a.array == "a")
    assert cls != "irregular"


def test_an_index_computed_in_float_has_the_stride_of_its_sectors():
    """A bilinear resize's source pixel, computed in float as C computes it, is known
    before run time: scaling by 1.5 its warps touch 6 or 7 sectors of floats (stride 2),
    by 0.5 two or three (stride 1)."""
    from kernelcast.properties.opencl import warp_stride

    for scale, expected in (("1.5f", 2), ("0.5f", 1)):
        source = ("__kernel void k(__global const float *a, __global float *b) {\n"
                  "    int x = get_global_id(0);\n"
                  f"    int s = convert_int(floor(((float)x + 0.5f) * {scale} - 0.5f));\n"
                  "    b[x] = a[max(s, 0)];\n}\n")
        counts = count_kernel(source, global_size=(4096,), local_size=(256,))
        access = next(a for a in counts.access_list if a.array == "a")
        x = np.arange(4096, dtype=np.float32)
        s = np.maximum(np.floor((x + np.float32(0.5)) * np.float32(float(scale[:-1]))
                                - np.float32(0.5)).astype(np.int64), 0)
        sectors = np.mean([len(set(w)) for w in (4 * s // 32).reshape(-1, 32)])
        assert round(sectors / 4) == expected
        assert warp_stride(counts, access, (4096,), (256,)) == expected
