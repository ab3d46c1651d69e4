"""Control flow that follows the launch: loops bounded by scalar arguments and by the
work-item's position, guards at the grid's edge, early returns, while loops, tree
reductions and data-dependent loops given their statistics.

Each kernel counts its own executions of a marked statement (``cnt[gid] += 1``); PoCL
runs it, and the mean over the work-items is the brute-force truth the front-end's
count of writes to ``cnt`` (per work-item, averaged over the launch) must equal.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernelcast.frontends.opencl import OpenCLSourceError, count_kernel

HEAD = "__kernel void k(__global int *cnt, __global const int *rows, int n, int m) {\n"
ID1 = "    int gid = get_global_id(0); int lid = get_local_id(0);\n"
ID2 = ("    int x = get_global_id(0); int y = get_global_id(1);\n"
       "    int gid = y * get_global_size(0) + x;\n")

# (name, body, global size, local size, n, m)
CASES = [
    ("loop bounded by an argument", ID1 + "    for (int k = 0; k < n; k++) cnt[gid] += 1;\n",
     (4096,), (64,), 37, 0),
    ("guard at the grid's edge", ID1 + "    if (gid < n) cnt[gid] += 1;\n",
     (4096,), (256,), 4000, 0),
    ("early return", ID1 + "    if (gid >= n) return;\n    cnt[gid] += 1;\n    cnt[gid] += 1;\n",
     (4096,), (128,), 3001, 0),
    ("triangular loop", ID1 + "    if (gid < n)\n"
                              "        for (int j = 0; j <= gid; j++) cnt[gid] += 1;\n",
     (2048,), (64,), 2000, 0),
    ("loop from the position to a bound", ID2 + "    for (int j = y; j < m; j++)\n"
                                                "        cnt[gid] += 1;\n",
     (64, 96), (16, 8), 0, 90),
    ("nested loop over the outer counter",
     ID1 + "    for (int i = 0; i < n; i++)\n"
           "        for (int j = i; j < m; j++) cnt[gid] += 1;\n",
     (512,), (64,), 40, 50),
    ("branch on the counter", ID1 + "    for (int i = 0; i < n; i++)\n"
                                   "        if (i % 3 == 0 || i > n / 2) cnt[gid] += 1;\n",
     (1024,), (64,), 100, 0),
    ("tree reduction", ID1 + "    for (int s = get_local_size(0) / 2; s > 0; s >>= 1)\n"
                            "        if (lid < s) cnt[gid] += 1;\n",
     (8192,), (256,), 0, 0),
    ("grid-stride loop", ID1 + "    for (int i = gid; i < n; i += get_global_size(0))\n"
                              "        cnt[gid] += 1;\n",
     (1024,), (64,), 5000, 0),
    ("bound through min()", ID1 + "    for (int k = 0; k < min(n, gid); k++) cnt[gid] += 1;\n",
     (1024,), (32,), 300, 0),
    ("while loop", ID1 + "    int v = gid;\n    while (v > 0) { v /= 2; cnt[gid] += 1; }\n",
     (4096,), (64,), 0, 0),
    ("do-while loop", ID1 + "    int v = gid / 3;\n"
                           "    do { cnt[gid] += 1; v -= 500; } while (v > 0);\n",
     (1024,), (64,), 0, 0),
    ("2-D guard", ID2 + "    if (x < n && y < m) cnt[gid] += 1;\n",
     (128, 64), (16, 16), 100, 50),
    ("sizes of a local axis", ID1 + "    int g = get_group_id(0);\n"
                                   "    if (g == get_num_groups(0) - 1 && lid < 10) "
                                   "cnt[gid] += 1;\n",
     (4096,), (256,), 0, 0),
]


def _cl(pocl_device):
    import pyopencl as cl

    platform = next(p for p in cl.get_platforms() if p.name == pocl_device.platform)
    ctx = cl.Context([platform.get_devices()[pocl_device.index]])
    return cl, ctx, cl.CommandQueue(ctx)


def _run(pocl_device, source, global_size, local_size, n, m, rows=None):
    """The marked statement's executions per work-item, run on PoCL."""
    cl, ctx, queue = _cl(pocl_device)
    items = int(np.prod(global_size))
    cnt = np.zeros(items, np.int32)
    rows = np.zeros(1, np.int32) if rows is None else rows
    mf = cl.mem_flags
    cnt_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=cnt)
    rows_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=rows)
    prg = cl.Program(ctx, source).build()
    prg.k(queue, global_size, local_size, cnt_buf, rows_buf, np.int32(n), np.int32(m))
    cl.enqueue_copy(queue, cnt, cnt_buf)
    queue.finish()
    return cnt


def _counted(counts) -> float:
    return sum(a.count for a in counts.access_list
               if a.array == "cnt" and a.direction == "write")


@pytest.mark.parametrize("name, body, global_size, local_size, n, m", CASES,
                         ids=[c[0] for c in CASES])
def test_counts_match_what_runs(pocl_device, name, body, global_size, local_size, n, m):
    source = HEAD + body + "}\n"
    truth = _run(pocl_device, source, global_size, local_size, n, m).mean()
    assert truth > 0  # the case exercises its statement
    counts = count_kernel(source, scalars={"n": n, "m": m}, global_size=global_size,
                          local_size=local_size)
    assert _counted(counts) == pytest.approx(truth, rel=1e-9)


def test_a_branch_periodic_in_the_position_is_sampled(pocl_device):
    """Positions are sampled near the values the kernel compares with: what turns
    with every third work-item is estimated, within a percent here."""
    source = HEAD + ID1 + ("    for (int i = 0; i < n; i++)\n"
                           "        if (i % 3 == 0 || i > gid) cnt[gid] += 1;\n}\n")
    truth = _run(pocl_device, source, (1024,), (64,), 100, 0).mean()
    counts = count_kernel(source, scalars={"n": 100, "m": 0}, global_size=(1024,),
                          local_size=(64,))
    assert _counted(counts) == pytest.approx(truth, rel=0.01)


def test_a_data_dependent_loop_takes_its_mean_trip_count(pocl_device):
    """A CSR row loop: its trips read the row pointers; given their mean, the count
    is exact."""
    source = HEAD + ID1 + ("    if (gid < n)\n"
                           "        for (int j = rows[gid]; j < rows[gid + 1]; j++)\n"
                           "            cnt[gid] += 1;\n}\n")
    n = 1000
    lengths = np.random.default_rng(0).integers(0, 20, n)
    rows = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    truth = _run(pocl_device, source, (1024,), (64,), n, 0, rows).mean()
    with pytest.raises(OpenCLSourceError, match=r":4:9: the trip count of the loop over "
                                                r"'j' depends on data"):
        count_kernel(source, scalars={"n": n, "m": 0}, global_size=(1024,),
                     local_size=(64,))
    counts = count_kernel(source, scalars={"n": n, "m": 0}, global_size=(1024,),
                          local_size=(64,), stats={4: lengths.mean()})
    assert _counted(counts) == pytest.approx(truth, rel=1e-9)


def test_a_data_dependent_branch_takes_its_probability(pocl_device):
    source = HEAD + ID1 + "    if (rows[gid] > 2) cnt[gid] += 1;\n}\n"
    rows = (np.arange(4096) % 10).astype(np.int32)
    truth = _run(pocl_device, source, (4096,), (64,), 0, 0, rows).mean()
    counts = count_kernel(source, scalars={"n": 0, "m": 0}, global_size=(4096,),
                          local_size=(64,), stats={3: float((rows > 2).mean())})
    assert _counted(counts) == pytest.approx(truth, rel=1e-9)


@pytest.mark.parametrize("body, kwargs, message", [
    ("for (int k = 0; k < n; k++) cnt[0] += 1;", {},
     "depends on the argument 'n', which was not given (give its value: --arg n=VALUE)"),
    ("if (get_global_id(0) < 5) for (int k = 0; k < get_global_id(0); k++) cnt[0] += 1;",
     {"scalars": {"n": 1}},
     "depends on the work-item's position, and no launch was given"),
    ("cnt[0] = n;", {"scalars": {"q": 1}}, "has no argument named 'q'"),
    ("cnt[0] = n;", {"scalars": {"n": 1.5}}, "the argument 'n' is an int: 1.5 is not a value"),
    ("for (int s = 5; s > 0; s /= 1) cnt[0] += 1;", {}, "the loop does not terminate"),
    ("for (int s = 1; s > 0; s *= 1) cnt[0] += 1;", {}, "the loop does not terminate"),
    ("for (long s = 1; s != 0; s += 0) cnt[0] += 1;", {}, "the loop does not terminate"),
])
def test_what_cannot_be_known_is_an_error(body, kwargs, message):
    source = HEAD + "    " + body + "\n}\n"
    with pytest.raises(OpenCLSourceError, match=message.replace("(", r"\(").replace(
            ")", r"\)").replace("'", "'")):
        count_kernel(source, **kwargs)


def test_a_launch_without_decisions_on_the_position_is_walked_once():
    """Straight-line code and argument-bounded loops cost one walk, whatever the
    grid's size."""
    import time

    source = HEAD + ID1 + "    for (int k = 0; k < n; k++) cnt[gid] += rows[k];\n}\n"
    started = time.perf_counter()
    counts = count_kernel(source, scalars={"n": 1000, "m": 0}, global_size=(1 << 24,),
                          local_size=(256,))
    assert _counted(counts) == 1000
    assert time.perf_counter() - started < 5


def test_typedefs_stand_for_their_types(pocl_device):
    """typedef names, chained, in arguments, declarations and casts; the counts are
    those of the types they stand for, and PoCL agrees on what runs."""
    source = ("#if USE_DOUBLE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
              "typedef real value_t;\ntypedef unsigned int count_t;\n"
              "__kernel void k(__global int *cnt, __global const int *rows, int n, int m) {\n"
              "    count_t gid = get_global_id(0);\n"
              "    value_t s = (value_t)gid * (real)0.5;\n"
              "    for (count_t k = 0; k < (count_t)n; k++) { s += 1; cnt[gid] += 1; }\n"
              "}\n")
    doubled = count_kernel(source, options="-D USE_DOUBLE=1", scalars={"n": 9, "m": 0})
    single = count_kernel(source, scalars={"n": 9, "m": 0})
    assert doubled.ops["add:double"] == single.ops["add:float"] == 9
    assert "mul:double" in doubled.ops and "mul:float" in single.ops
    cl, ctx, queue = _cl(pocl_device)
    cl.Program(ctx, source).build(options="-D USE_DOUBLE=1")  # the same source compiles
    truth = _run(pocl_device, source, (64,), (64,), 9, 0).mean()
    assert _counted(single) == truth == 9
    with pytest.raises(OpenCLSourceError, match="typedef 'real' is defined twice"):
        count_kernel("typedef float real;\ntypedef int real;\n" + source.split("#endif\n")[1])


def test_a_guard_relating_two_axes_is_sampled_finely(pocl_device):
    """`if (x <= y)` turns along a diagonal, which no position along one axis marks:
    both axes are cut into RELATED_PIECES stretches, and the share is estimated within
    a percent."""
    source = HEAD + ID2 + "    if (x <= y) cnt[gid] += 1;\n}\n"
    truth = _run(pocl_device, source, (512, 512), (16, 16), 0, 0).mean()
    counts = count_kernel(source, scalars={"n": 0, "m": 0}, global_size=(512, 512),
                          local_size=(16, 16))
    assert _counted(counts) == pytest.approx(truth, rel=0.01)
