"""OpenCL programs as applications write them, with launches and NumPy references.

The sources in data/opencl-programs/ are plain OpenCL C 1.2 kernels of well-known
computations: PolyBench/GPU's linear algebra, data mining and stencils (gemm, 2mm, atax,
bicg, gesummv, mvt, syrk, syr2k, covariance, correlation, Gram-Schmidt, LU, 2-D and 3-D
convolution, fdtd-2d, jacobi-1d/2d), work-group reductions and scans, softmax, CSR spmv,
image filters and resizing, k-means assignment, kNN distances, N-body and Black-Scholes.
They are written the way such code is written (loops bounded by size arguments,
triangular loops, guards where the global size is rounded up to the work-group size,
several kernels per file, ``#define``/``#if``/``-D`` options, ``typedef``, math builtins,
``__local`` arrays with barriers, naive and tiled variants), so that the OpenCL front-end
and the models can be judged on what applications ship, not only on generated kernels.

Each kernel has two launches sized for a GPU (about 20 µs to 5 ms on an H100) and one
small launch for PoCL on a CPU (``Launch.size`` is "gpu" or "pocl"). A launch carries
everything needed to run and check it: build options, scalar arguments, arrays
(dtype and element count), how its inputs are made (NumPy's generator with a fixed
seed), global and local sizes, the arrays it writes, and a NumPy reference computed in
float64. Outputs are compared by the norm-wise relative error of
kernelcast.measure.verify (the NaN pattern of never-written elements must match) against
``TOLERANCE`` of the output's dtype.

Public names: PROGRAMS, DIRECTORY, TOLERANCE, Launch, source, kernel_arguments,
host_arrays, expected, launch_arguments, build, run_launch, measure_launch, output_errors,
kernels.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: where the sources are, in a source checkout
DIRECTORY = Path(__file__).resolve().parents[3] / "data" / "opencl-programs"
#: largest norm-wise relative error accepted, by output dtype
TOLERANCE = {"float32": 1e-4, "float64": 1e-10, "int32": 0.0, "uint8": 0.0}
SEED = 20260101

F32, F64, I32, U8 = (np.dtype(t) for t in ("float32", "float64", "int32", "uint8"))
_SCALAR_TYPES = {"int": np.int32, "uint": np.uint32, "unsigned int": np.uint32,
                 "unsigned": np.uint32, "long": np.int64, "ulong": np.uint64,
                 "float": np.float32, "double": np.float64}


@dataclass(frozen=True)
class Launch:
    """One launch of one kernel of a program file at one size."""

    program: str  # file name in DIRECTORY
    kernel: str
    size: str  # "gpu" or "pocl"
    scalars: dict  # name -> value (typed as the kernel declares it)
    arrays: dict  # name -> (dtype, elements)
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    reference: Callable = field(repr=False, compare=False)  # (arrays, scalars) -> outputs
    outputs: tuple[str, ...] = ()  # written only: poisoned (NaN, or -1) before the launch
    updates: tuple[str, ...] = ()  # read and written
    options: str = ""  # build options
    inputs: Callable | None = field(default=None, repr=False, compare=False)
    stats: dict = field(default_factory=dict)  # line -> what data decides there (mean)

    @property
    def written(self) -> tuple[str, ...]:
        return self.outputs + self.updates

    @property
    def dtype(self) -> str:
        """The floating-point type the kernel computes in."""
        kinds = {np.dtype(t).name for t, _ in self.arrays.values()}
        return "float64" if "float64" in kinds else "float32"

    @property
    def params(self) -> dict:
        """The scalar arguments and the global size (JSON-ready)."""
        return {**self.scalars, "global_size": list(self.global_size)}

    @property
    def name(self) -> str:
        sizes = ",".join(f"{k}={v}" for k, v in self.scalars.items() if isinstance(v, int))
        return f"{self.kernel}/{sizes}/global={'x'.join(map(str, self.global_size))}"


def source(launch_or_program) -> str:
    """The OpenCL C text of a launch's program (or of a program file name)."""
    program = getattr(launch_or_program, "program", launch_or_program)
    return (DIRECTORY / program).read_text(encoding="utf-8")


_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_QUALIFIERS = {"__global", "global", "__constant", "constant", "__local", "local", "const",
               "restrict", "__restrict", "volatile"}


def kernel_arguments(text: str, kernel: str) -> list[tuple[str, str, bool]]:
    """(name, type, is_pointer) of each parameter of *kernel* in *text*, in order; a type
    named by a ``typedef`` that is defined once is resolved."""
    text = _COMMENTS.sub(" ", text)
    typedefs = {}
    for base, name in re.findall(r"typedef\s+([\w ]+?)\s+(\w+)\s*;", text):
        typedefs[name] = base if name not in typedefs else None
    match = re.search(rf"__kernel\s+void\s+{kernel}\s*\(([^)]*)\)", text)
    if match is None:
        raise KeyError(f"no kernel {kernel!r}")
    out = []
    for part in match.group(1).split(","):
        words = part.replace("*", " * ").split()
        kind = " ".join(w for w in words[:-1] if w not in _QUALIFIERS and w != "*")
        out.append((words[-1], typedefs.get(kind) or kind, "*" in words))
    return out


def host_arrays(launch: Launch) -> dict:
    """The arrays of *launch* before it runs: inputs from a generator seeded with SEED
    (floats uniform in [0.5, 1.5), bytes uniform in 0..255, unless the launch's
    ``inputs`` makes them), outputs poisoned (NaN for floats, -1 for integers)."""
    rng = np.random.default_rng(SEED)
    made = dict(launch.inputs(rng, launch.scalars)) if launch.inputs else {}
    out = {}
    for name, (dtype, elements) in launch.arrays.items():
        dtype = np.dtype(dtype)
        if name in launch.outputs:
            value = np.full(elements, np.nan if dtype.kind == "f" else -1).astype(dtype)
        elif name in made:
            value = np.ascontiguousarray(made[name], dtype=dtype).reshape(-1)
        elif dtype.kind == "f":
            value = rng.uniform(0.5, 1.5, elements).astype(dtype)
        elif dtype == U8:
            value = rng.integers(0, 256, elements, dtype=np.uint8)
        else:
            raise ValueError(f"{launch.name}: no values for the integer array {name}")
        if value.size != elements:
            raise ValueError(f"{launch.name}: {name} has {value.size} elements, not {elements}")
        out[name] = value
    return out


def _typed_scalars(launch: Launch) -> dict:
    args = {name: kind for name, kind, pointer in kernel_arguments(source(launch),
                                                                    launch.kernel)
            if not pointer}
    return {name: _SCALAR_TYPES[args[name]](value) for name, value in launch.scalars.items()}


def expected(launch: Launch, host: dict) -> dict:
    """The reference outputs of *launch* from its arrays *host* before the launch, computed
    in float64 (integer arrays as they are), flat."""
    wide = {k: v.astype(np.float64) if v.dtype.kind == "f" else v.copy()
            for k, v in host.items()}
    scalars = {k: v.item() for k, v in _typed_scalars(launch).items()}
    result = launch.reference(wide, scalars)
    if set(result) != set(launch.written):
        raise ValueError(f"{launch.name}: the reference gives {sorted(result)}, the launch "
                         f"writes {sorted(launch.written)}")
    return {k: np.asarray(v).reshape(-1) for k, v in result.items()}


def output_errors(launch: Launch, host: dict, outputs: dict) -> dict:
    """The norm-wise relative error of each written array of *outputs* against the
    reference from the arrays *host* before the launch (compare with TOLERANCE)."""
    from kernelcast.measure.verify import relative_error

    return {k: relative_error(outputs[k], v) for k, v in expected(launch, host).items()}


def launch_arguments(launch: Launch, queue, host: dict | None = None) -> tuple[dict, dict]:
    """(host arrays, arguments by name): the arrays copied to the device of *queue* as
    pyopencl arrays and the scalars as NumPy values of their declared types."""
    import pyopencl.array as cla

    host = host_arrays(launch) if host is None else host
    args = {name: cla.to_device(queue, value) for name, value in host.items()}
    args.update(_typed_scalars(launch))
    return host, args


def build(launch: Launch, context):
    """The pyopencl kernel of *launch*, built with its options on *context*."""
    import pyopencl as cl

    program = cl.Program(context, source(launch)).build(options=launch.options.split())
    return getattr(program, launch.kernel)


def run_launch(launch: Launch, context, queue) -> tuple[dict, dict]:
    """Run *launch* once on *context*/*queue*; (its arrays before, the written arrays
    after), both host NumPy arrays by name."""
    import pyopencl as cl

    kernel = build(launch, context)
    host, args = launch_arguments(launch, queue)
    order = kernel_arguments(source(launch), launch.kernel)
    kernel.set_args(*(args[n].data if pointer else args[n] for n, _, pointer in order))
    cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size, launch.local_size).wait()
    return host, {name: args[name].get() for name in launch.written}


def measure_launch(backend, launch: Launch, text: str, runs: int, drop: int) -> dict:
    """The status and timing fields of the store row of *launch*, its source *text*
    compiled with the launch's options by the OpenCL *backend* (kernelcast.measure
    .backends): run once on its inputs and compared with its NumPy reference, then timed
    by kernelcast.measure.protocol (*runs* launches an attempt, the first *drop* left
    out) with the backend's event timer. An output beyond TOLERANCE is a wrong answer
    and a KernelcastError (a compile error, memory the device lacks, a failed launch)
    the failure's status and message: neither is timed."""
    import copy

    import pyopencl as cl

    from kernelcast.errors import KernelcastError
    from kernelcast.measure import protocol
    from kernelcast.measure.backends import LaunchError, OutOfMemory
    from kernelcast.measure.campaign import failure_fields
    from kernelcast.measure.launch import GeneratedKernel, KernelArgument

    args = {}
    try:
        builder = copy.copy(backend)  # the same context and queue, this launch's options
        builder.build_options = launch.options
        try:
            host, args = launch_arguments(launch, backend.queue)
        except (cl.MemoryError, cl.RuntimeError) as err:
            raise OutOfMemory(f"allocation failed: {err}") from None
        order = tuple(KernelArgument(name, np.dtype(getattr(args[name], "dtype", "O")),
                                     pointer)
                      for name, _, pointer in kernel_arguments(text, launch.kernel))
        grid = tuple(g // b for g, b in zip(launch.global_size, launch.local_size,
                                            strict=True))
        generated = GeneratedKernel(launch.kernel, "opencl", text, order, grid,
                                    launch.local_size)
        compiled = builder.compile(generated)
        backend.time_launches(compiled, generated, args, {}, 1)
        try:
            outputs = {name: args[name].get() for name in launch.written}
        except cl.Error as err:
            raise LaunchError(f"reading the results failed: {err}") from None
        errors = output_errors(launch, host, outputs)
        wrong = {k: e for k, e in errors.items()
                 if not e <= TOLERANCE[outputs[k].dtype.name]}
        if wrong:
            return {"status": "wrong_answer", "max_rel_error": max(errors.values()),
                    "message": "relative error " + ", ".join(
                        f"{k} {e:.3g}" for k, e in errors.items())}
        timing = protocol.time_with_protocol(
            lambda count: backend.time_launches(compiled, generated, args, {}, count),
            runs=runs, drop=drop)
    except KernelcastError as err:
        return failure_fields(err)
    finally:
        for value in args.values():
            if hasattr(value, "data"):
                value.data.release()
    return {"status": timing.status, "min_s": timing.min, "median_s": timing.median,
            "times_s": list(timing.times), "dropped": timing.drop,
            "attempts": timing.attempts, "spreads": list(timing.spreads),
            "max_rel_error": max(errors.values(), default=0.0)}


def kernels(launches=None) -> dict:
    """(program, kernel) -> its launches."""
    out = {}
    for launch in PROGRAMS if launches is None else launches:
        out.setdefault((launch.program, launch.kernel), []).append(launch)
    return out


# {{{ the launches

def _up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _grid(x: int, y: int, local: tuple[int, int]) -> dict:
    return {"global_size": (_up(x, local[0]), _up(y, local[1])), "local_size": local}


def _line(n: int, local: int = 256) -> dict:
    return {"global_size": (_up(n, local),), "local_size": (local,)}


def _groups(count: int, local: int = 256) -> dict:
    """A 1-D launch of *count* work-groups."""
    return {"global_size": (count * local,), "local_size": (local,)}


def _kernel(program: str, kernel: str, make: Callable, names: str, gpu: list[tuple],
            pocl: tuple, options: str = "") -> list[Launch]:
    """The launches of one kernel: ``make(**sizes)`` gives a launch's fields, *names* (space
    separated) name the numbers of each size in *gpu* and *pocl*."""
    out = []
    for size, values in [("gpu", v) for v in gpu] + [("pocl", pocl)]:
        fields = make(**dict(zip(names.split(), values, strict=True)))
        out.append(Launch(program=program, kernel=kernel, size=size,
                          options=fields.pop("options", options), **fields))
    return out


def _gemm(ni, nj, nk):
    return dict(
        scalars={"alpha": 1.5, "beta": 0.5, "ni": ni, "nj": nj, "nk": nk},
        arrays={"A": (F32, ni * nk), "B": (F32, nk * nj), "C": (F32, ni * nj)}, updates=("C",),
        reference=lambda a, s: {"C": s["alpha"] * a["A"].reshape(ni, nk)
                                @ a["B"].reshape(nk, nj)
                                + s["beta"] * a["C"].reshape(ni, nj)},
        **_grid(nj, ni, (16, 16)))


def _mm2_tmp(ni, nj, nk):
    return dict(
        scalars={"alpha": 1.5, "ni": ni, "nj": nj, "nk": nk},
        arrays={"A": (F32, ni * nk), "B": (F32, nk * nj), "tmp": (F32, ni * nj)},
        outputs=("tmp",), **_grid(nj, ni, (16, 16)),
        reference=lambda a, s: {"tmp": s["alpha"] * a["A"].reshape(ni, nk)
                                @ a["B"].reshape(nk, nj)})


def _mm2_out(ni, nj, nl):
    return dict(
        scalars={"beta": 0.5, "ni": ni, "nj": nj, "nl": nl},
        arrays={"tmp": (F32, ni * nj), "C": (F32, nj * nl), "D": (F32, ni * nl)},
        updates=("D",), **_line(ni * nl),
        reference=lambda a, s: {"D": a["tmp"].reshape(ni, nj) @ a["C"].reshape(nj, nl)
                                + s["beta"] * a["D"].reshape(ni, nl)})


def _atax_ax(m, n):
    return dict(scalars={"m": m, "n": n}, outputs=("tmp",), **_line(m),
                arrays={"A": (F32, m * n), "x": (F32, n), "tmp": (F32, m)},
                reference=lambda a, s: {"tmp": a["A"].reshape(m, n) @ a["x"]})


def _atax_aty(m, n):
    return dict(scalars={"m": m, "n": n}, outputs=("y",), **_line(n),
                arrays={"A": (F32, m * n), "tmp": (F32, m), "y": (F32, n)},
                reference=lambda a, s: {"y": a["A"].reshape(m, n).T @ a["tmp"]})


def _bicg_q(nx, ny):
    return dict(scalars={"nx": nx, "ny": ny}, outputs=("q",), options="-D GROUP=256",
                arrays={"A": (F64, nx * ny), "p": (F64, ny), "q": (F64, nx)},
                reference=lambda a, s: {"q": a["A"].reshape(nx, ny) @ a["p"]},
                **_groups(nx))


def _bicg_s(nx, ny):
    return dict(scalars={"nx": nx, "ny": ny}, outputs=("s",), **_line(ny),
                arrays={"A": (F64, nx * ny), "r": (F64, nx), "s": (F64, ny)},
                reference=lambda a, s: {"s": a["r"] @ a["A"].reshape(nx, ny)})


def _gesummv(n):
    return dict(
        scalars={"alpha": 1.5, "beta": 0.75, "n": n}, outputs=("y",), **_line(n),
        arrays={"A": (F32, n * n), "B": (F32, n * n), "x": (F32, n), "y": (F32, n)},
        reference=lambda a, s: {"y": s["alpha"] * a["A"].reshape(n, n) @ a["x"]
                                + s["beta"] * a["B"].reshape(n, n) @ a["x"]})


def _mvt(transposed):
    x, y = ("x2", "y2") if transposed else ("x1", "y1")

    def make(n):
        def reference(a, s):
            matrix = a["A"].reshape(n, n)
            return {x: a[x] + (matrix.T if transposed else matrix) @ a[y]}
        return dict(scalars={"n": n}, updates=(x,), **_line(n), reference=reference,
                    arrays={"A": (F32, n * n), y: (F32, n), x: (F32, n)})
    return make


def _syrk(n, m):
    def reference(a, s):
        A, C = a["A"].reshape(n, m), a["C"].reshape(n, n).copy()
        lower = np.tril_indices(n)
        C[lower] = (s["alpha"] * A @ A.T + s["beta"] * C)[lower]
        return {"C": C}
    return dict(scalars={"alpha": 1.5, "beta": 0.5, "n": n, "m": m}, updates=("C",),
                arrays={"A": (F32, n * m), "C": (F32, n * n)}, reference=reference,
                **_grid(n, n, (16, 16)))


def _syr2k(n, m):
    def reference(a, s):
        A, B = a["A"].reshape(n, m), a["B"].reshape(n, m)
        return {"C": s["alpha"] * (A @ B.T + B @ A.T) + s["beta"] * a["C"].reshape(n, n)}
    return dict(scalars={"alpha": 1.5, "beta": 0.5, "n": n, "m": m}, updates=("C",),
                arrays={"A": (F64, n * m), "B": (F64, n * m), "C": (F64, n * n)},
                reference=reference, **_grid(n, n, (16, 16)))


def _centred(rng, s):
    return {"data": rng.uniform(-1.0, 1.0, s["m"] * s["n"])}


def _cov_mean(m, n):
    return dict(scalars={"float_n": float(n), "m": m, "n": n}, outputs=("mean",), **_line(m),
                arrays={"data": (F32, n * m), "mean": (F32, m)},
                reference=lambda a, s: {"mean": a["data"].reshape(n, m).mean(axis=0)})


def _cov_center(m, n):
    return dict(scalars={"m": m, "n": n}, updates=("data",), **_grid(m, n, (32, 8)),
                arrays={"data": (F32, n * m), "mean": (F32, m)},
                reference=lambda a, s: {"data": a["data"].reshape(n, m) - a["mean"]})


def _cov_covar(m, n):
    def reference(a, s):
        data = a["data"].reshape(n, m)
        return {"symmat": data.T @ data / (s["float_n"] - 1)}
    return dict(scalars={"float_n": float(n), "m": m, "n": n}, outputs=("symmat",),
                arrays={"data": (F32, n * m), "symmat": (F32, m * m)}, **_line(m),
                reference=reference, inputs=_centred)


def _spread_columns(rng, s):
    """Columns of two spreads, far either side of correlation.cl's EPS (0.1)."""
    m, n = s["m"], s["n"]
    scale = np.where(np.arange(m) % 3 == 0, 0.05, 1.0)
    return {"data": 1.0 + scale * rng.uniform(0.0, 1.0, (n, m))}


def _corr_stddev(m, n):
    def reference(a, s):
        data = a["data"].reshape(n, m)
        sd = data.std(axis=0)
        return {"mean": data.mean(axis=0), "stddev": np.where(sd <= 0.1, 1.0, sd)}
    return dict(scalars={"float_n": float(n), "m": m, "n": n}, outputs=("mean", "stddev"),
                arrays={"data": (F32, n * m), "mean": (F32, m), "stddev": (F32, m)},
                reference=reference, inputs=_spread_columns, **_line(m))


def _corr_normalize(m, n):
    def reference(a, s):
        scaled = (a["data"].reshape(n, m) - a["mean"]) / (np.sqrt(s["float_n"])
                                                          * a["stddev"])
        return {"data": scaled}
    return dict(scalars={"float_n": float(n), "m": m, "n": n}, updates=("data",),
                arrays={"data": (F32, n * m), "mean": (F32, m), "stddev": (F32, m)},
                reference=reference, **_grid(m, n, (32, 8)))


def _corr_corr(m, n):
    def reference(a, s):
        data = a["data"].reshape(n, m)
        corr = data.T @ data
        np.fill_diagonal(corr, 1.0)
        return {"symmat": corr}
    return dict(scalars={"m": m, "n": n}, outputs=("symmat",), inputs=_centred,
                arrays={"data": (F32, n * m), "symmat": (F32, m * m)},
                reference=reference, **_line(m))


def _gs_norm(m, n, k):
    def reference(a, s):
        R = a["R"].reshape(n, n).copy()
        R[k, k] = np.linalg.norm(a["A"].reshape(m, n)[:, k])
        return {"R": R}
    return dict(scalars={"k": k, "m": m, "n": n}, outputs=("R",), options="-D GROUP=256",
                arrays={"A": (F32, m * n), "R": (F32, n * n)}, reference=reference,
                **_groups(1))


def _gs_normalize(m, n, k):
    def reference(a, s):
        Q = a["Q"].reshape(m, n).copy()
        Q[:, k] = a["A"].reshape(m, n)[:, k] / a["R"].reshape(n, n)[k, k]
        return {"Q": Q}
    return dict(scalars={"k": k, "m": m, "n": n}, outputs=("Q",), **_line(m),
                arrays={"A": (F32, m * n), "R": (F32, n * n), "Q": (F32, m * n)},
                reference=reference)


def _gs_update(m, n, k):
    def reference(a, s):
        A, R = a["A"].reshape(m, n).copy(), a["R"].reshape(n, n).copy()
        q = a["Q"].reshape(m, n)[:, k]
        R[k, k + 1:] = q @ A[:, k + 1:]
        A[:, k + 1:] -= np.outer(q, R[k, k + 1:])
        return {"A": A, "R": R}
    return dict(scalars={"k": k, "m": m, "n": n}, outputs=("R",), updates=("A",),
                arrays={"A": (F32, m * n), "R": (F32, n * n), "Q": (F32, m * n)},
                reference=reference, **_line(n - k - 1))


def _lu_update(n, k):
    def reference(a, s):
        A = a["A"].reshape(n, n).copy()
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
        return {"A": A}
    return dict(scalars={"k": k, "n": n}, updates=("A",), arrays={"A": (F32, n * n)},
                reference=reference, **_grid(n - k - 1, n - k - 1, (16, 16)))


_CONV2D = np.array([[0.05, 0.10, 0.05], [0.10, 0.40, 0.10], [0.05, 0.10, 0.05]])


def _conv2d(ni, nj):
    def reference(a, s):
        A, B = a["A"].reshape(ni, nj), a["B"].reshape(ni, nj).copy()
        B[1:-1, 1:-1] = sum(_CONV2D[di, dj] * A[di:ni - 2 + di, dj:nj - 2 + dj]
                            for di in range(3) for dj in range(3))
        return {"B": B}
    return dict(scalars={"ni": ni, "nj": nj}, outputs=("B",), reference=reference,
                arrays={"A": (F32, ni * nj), "B": (F32, ni * nj)}, **_grid(nj, ni, (32, 8)))


_CONV3D = np.array([1, 2, 1, 2, 4, 2, 1, 2, 1, 2, 4, 2, 4, 28, 4, 2, 4, 2,
                    1, 2, 1, 2, 4, 2, 1, 2, 1]).reshape(3, 3, 3) / 100


def _conv3d(ni, nj, nk):
    def reference(a, s):
        A, B = a["A"].reshape(ni, nj, nk), a["B"].reshape(ni, nj, nk).copy()
        inner = np.zeros((ni - 2, nj - 2, nk - 2))
        for di, dj, dk in np.ndindex(3, 3, 3):
            inner += _CONV3D[di, dj, dk] * A[di:ni - 2 + di, dj:nj - 2 + dj, dk:nk - 2 + dk]
        B[1:-1, 1:-1, 1:-1] = inner
        return {"B": B}
    return dict(scalars={"ni": ni, "nj": nj, "nk": nk}, outputs=("B",), reference=reference,
                arrays={"A": (F32, ni * nj * nk), "B": (F32, ni * nj * nk)},
                **_grid(nk, nj, (32, 8)))


def _fdtd_ey(nx, ny):
    def reference(a, s):
        ey, hz = a["ey"].reshape(nx, ny).copy(), a["hz"].reshape(nx, ny)
        ey[1:] -= 0.5 * (hz[1:] - hz[:-1])
        ey[0] = a["fict"][s["t"]]
        return {"ey": ey}
    return dict(scalars={"t": 3, "nx": nx, "ny": ny}, updates=("ey",), reference=reference,
                arrays={"fict": (F32, 10), "ey": (F32, nx * ny), "hz": (F32, nx * ny)},
                **_grid(ny, nx, (32, 8)))


def _fdtd_ex(nx, ny):
    def reference(a, s):
        ex, hz = a["ex"].reshape(nx, ny).copy(), a["hz"].reshape(nx, ny)
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        return {"ex": ex}
    return dict(scalars={"nx": nx, "ny": ny}, updates=("ex",), reference=reference,
                arrays={"ex": (F32, nx * ny), "hz": (F32, nx * ny)}, **_grid(ny, nx, (32, 8)))


def _fdtd_hz(nx, ny):
    def reference(a, s):
        ex, ey = a["ex"].reshape(nx, ny), a["ey"].reshape(nx, ny)
        hz = a["hz"].reshape(nx, ny).copy()
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        return {"hz": hz}
    return dict(scalars={"nx": nx, "ny": ny}, updates=("hz",), reference=reference,
                arrays={"ex": (F32, nx * ny), "ey": (F32, nx * ny), "hz": (F32, nx * ny)},
                **_grid(ny, nx, (32, 8)))


def _jacobi1d(n):
    def reference(a, s):
        A, B = a["A"], a["B"].copy()
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        return {"B": B}
    return dict(scalars={"n": n}, outputs=("B",), reference=reference,
                arrays={"A": (F32, n), "B": (F32, n)}, **_line(n))


def _jacobi2d(n, m):
    def reference(a, s):
        A, B = a["A"].reshape(n, m), a["B"].reshape(n, m).copy()
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        return {"B": B}
    return dict(scalars={"n": n, "m": m}, outputs=("B",), reference=reference,
                arrays={"A": (F32, n * m), "B": (F32, n * m)}, **_grid(m, n, (16, 16)))


_DOUBLE = "-D USE_DOUBLE=1 -D GROUP=256"


def _reduce_partial(n, groups):
    def reference(a, s):
        items = groups * 256  # work-item i adds x[i], x[i + items], ...
        x = np.zeros(_up(n, items))
        x[:n] = a["x"]
        return {"partial": x.reshape(-1, groups, 256).sum(axis=(0, 2))}
    return dict(scalars={"n": n}, outputs=("partial",), reference=reference,
                arrays={"x": (F64, n), "partial": (F64, groups)}, **_groups(groups))


def _reduce_final(count):
    return dict(scalars={"count": count}, outputs=("result",),
                arrays={"partial": (F64, count), "result": (F64, 1)},
                reference=lambda a, s: {"result": [a["partial"].sum()]}, **_groups(1))


def _scan_block(n):
    groups = _up(n, 256) // 256

    def reference(a, s):
        x = np.zeros(groups * 256)
        x[:n] = a["x"]
        blocks = np.cumsum(x.reshape(groups, 256), axis=1)
        return {"y": blocks.reshape(-1)[:n], "sums": blocks[:, -1]}
    return dict(scalars={"n": n}, outputs=("y", "sums"), reference=reference,
                options="-D GROUP=256",
                arrays={"x": (F32, n), "y": (F32, n), "sums": (F32, groups)}, **_line(n))


def _scan_add(n):
    groups = _up(n, 256) // 256

    def reference(a, s):
        add = np.concatenate([[0.0], a["offsets"][:-1]])
        return {"y": a["y"] + np.repeat(add, 256)[:n]}
    return dict(scalars={"n": n}, updates=("y",), reference=reference,
                arrays={"y": (F32, n), "offsets": (F32, groups)}, **_line(n))


def _softmax_reference(rows, cols):
    def reference(a, s):
        x = a["x"].reshape(rows, cols)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}
    return reference


def _logits(rng, s):
    return {"x": rng.uniform(-4.0, 4.0, s["rows"] * s["cols"])}


def _softmax_naive(rows, cols):
    return dict(scalars={"rows": rows, "cols": cols}, outputs=("y",), inputs=_logits,
                arrays={"x": (F32, rows * cols), "y": (F32, rows * cols)},
                reference=_softmax_reference(rows, cols), **_line(rows))


def _softmax_rows(rows, cols):
    def inputs(rng, s):
        return {"x": rng.uniform(-4.0, 4.0, rows * cols)}
    return dict(scalars={"cols": cols}, outputs=("y",), inputs=inputs,
                options="-D GROUP=256",
                arrays={"x": (F32, rows * cols), "y": (F32, rows * cols)},
                reference=_softmax_reference(rows, cols), **_groups(rows))


def _line_of(program: str, text: str) -> int:
    """The line of *program* where *text* first appears."""
    lines = (DIRECTORY / program).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _csr_counts(rows):
    return 1 + (np.arange(rows) * 7) % 19  # 1..19 entries, 10 on average


def _spmv(rows):
    counts = _csr_counts(rows)
    nnz = int(counts.sum())

    def inputs(rng, s):
        return {"row_ptr": np.concatenate([[0], np.cumsum(counts)]),
                "col_idx": rng.integers(0, rows, nnz)}

    def reference(a, s):
        products = a["vals"] * a["x"][a["col_idx"]]
        return {"y": np.add.reduceat(products, a["row_ptr"][:-1])}
    # the row loop's bounds read row_ptr: its mean trip count is the statistic a user
    # of the model gives (the mean entries per row of the matrix)
    line = _line_of("spmv.cl", "for (int k = start")
    return dict(scalars={"rows": rows}, outputs=("y",), inputs=inputs, reference=reference,
                stats={line: float(counts.mean())},
                arrays={"row_ptr": (I32, rows + 1), "col_idx": (I32, nnz), "vals": (F32, nnz),
                            "x": (F32, rows), "y": (F32, rows)}, **_line(rows))


def _box_blur(width, height, radius=2):
    def reference(a, s):
        img = np.pad(a["src"].reshape(height, width).astype(np.int64), radius, mode="edge")
        total = sum(img[dy:dy + height, dx:dx + width]
                    for dy in range(2 * radius + 1) for dx in range(2 * radius + 1))
        return {"dst": np.floor(total / (2 * radius + 1) ** 2 + 0.5).astype(np.uint8)}
    return dict(scalars={"width": width, "height": height}, outputs=("dst",),
                options=f"-D RADIUS={radius}", reference=reference,
                arrays={"src": (U8, width * height), "dst": (U8, width * height)},
                **_grid(width, height, (16, 16)))


_GAUSS = np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1]) / 256


def _gaussian5x5(width, height):
    def reference(a, s):
        src = a["src"].reshape(height, width)
        dst = src.copy()
        dst[2:-2, 2:-2] = sum(_GAUSS[dy, dx] * src[dy:height - 4 + dy, dx:width - 4 + dx]
                              for dy in range(5) for dx in range(5))
        return {"dst": dst}
    return dict(scalars={"width": width, "height": height}, outputs=("dst",),
                reference=reference,
                arrays={"src": (F32, width * height), "dst": (F32, width * height)},
                **_grid(width, height, (16, 16)))


def _sobel(width, height):
    def reference(a, s):
        p = a["img"].reshape(height, width).astype(np.float64)
        w, h = width, height

        def at(dy, dx):
            return p[1 + dy:h - 1 + dy, 1 + dx:w - 1 + dx]
        gx = (at(-1, 1) + 2 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2 * at(0, -1) + at(1, -1))
        gy = (at(1, -1) + 2 * at(1, 0) + at(1, 1)) - (at(-1, -1) + 2 * at(-1, 0) + at(-1, 1))
        mag = np.zeros((h, w))
        mag[1:-1, 1:-1] = np.sqrt(gx * gx + gy * gy)
        return {"mag": mag}
    return dict(scalars={"width": width, "height": height}, outputs=("mag",),
                reference=reference,
                arrays={"img": (U8, width * height), "mag": (F32, width * height)},
                **_grid(width, height, (16, 16)))


def _resize(in_w, in_h, out_w, out_h):
    """At GPU sizes out_w and out_h are powers of two: the scale, and so the source
    coordinates, are exact in float32, as they are in the float64 reference."""
    def reference(a, s):
        src = a["src"].reshape(in_h, in_w)
        sx = np.maximum((np.arange(out_w) + 0.5) * (in_w / out_w) - 0.5, 0.0)
        sy = np.maximum((np.arange(out_h) + 0.5) * (in_h / out_h) - 0.5, 0.0)
        x0 = np.minimum(np.floor(sx).astype(int), in_w - 1)
        y0 = np.minimum(np.floor(sy).astype(int), in_h - 1)
        x1, y1 = np.minimum(x0 + 1, in_w - 1), np.minimum(y0 + 1, in_h - 1)
        fx, fy = (sx - x0)[None, :], (sy - y0)[:, None]
        top = src[y0][:, x0] * (1 - fx) + src[y0][:, x1] * fx
        bottom = src[y1][:, x0] * (1 - fx) + src[y1][:, x1] * fx
        return {"dst": top * (1 - fy) + bottom * fy}
    return dict(scalars={"in_w": in_w, "in_h": in_h, "out_w": out_w, "out_h": out_h},
                outputs=("dst",), reference=reference,
                arrays={"src": (F32, in_w * in_h), "dst": (F32, out_w * out_h)},
                **_grid(out_w, out_h, (16, 16)))


def _chunks(n, size=65536):
    return (slice(i, min(i + size, n)) for i in range(0, n, size))


def _kmeans(n, k, d):
    def inputs(rng, s):
        centroids = rng.uniform(0.0, 10.0, (k, d))
        points = centroids[rng.integers(0, k, n)] + rng.normal(0.0, 0.1, (n, d))
        return {"points": points.T, "centroids": centroids}

    def reference(a, s):
        points, c = a["points"].reshape(d, n).T, a["centroids"].reshape(k, d)
        out = np.empty(n, np.int32)
        for part in _chunks(n):
            p = points[part]
            dist = (p * p).sum(1)[:, None] - 2 * p @ c.T + (c * c).sum(1)[None, :]
            out[part] = dist.argmin(axis=1)
        return {"membership": out}
    return dict(scalars={"n": n, "k": k, "d": d}, outputs=("membership",), inputs=inputs,
                reference=reference, **_line(n),
                arrays={"points": (F32, n * d), "centroids": (F32, k * d),
                            "membership": (I32, n)})


def _knn(n, nq, d):
    def reference(a, s):
        p, q = a["points"].reshape(d, n).T, a["queries"].reshape(nq, d)
        squared = (q * q).sum(1)[:, None] - 2 * q @ p.T + (p * p).sum(1)[None, :]
        return {"dist": np.sqrt(np.maximum(squared, 0.0))}
    return dict(scalars={"n": n, "nq": nq, "d": d}, outputs=("dist",), reference=reference,
                arrays={"points": (F32, n * d), "queries": (F32, nq * d), "dist": (F32, nq * n)},
                **_grid(n, nq, (64, 4)))


def _nbody(tiled):
    def make(n):
        def reference(a, s):
            pos = np.stack([a["px"], a["py"], a["pz"]], axis=1)
            acc = np.empty((n, 3))
            for part in _chunks(n, 1024):
                delta = pos[None, :, :] - pos[part, None, :]
                inv = 1.0 / np.sqrt((delta * delta).sum(2) + s["eps2"])
                acc[part] = ((a["mass"][None, :] * inv ** 3)[:, :, None] * delta).sum(1)
            return {"ax": acc[:, 0], "ay": acc[:, 1], "az": acc[:, 2]}
        return dict(scalars={"eps2": 0.01, "n": n}, outputs=("ax", "ay", "az"),
                    options="-D GROUP=256" if tiled else "", reference=reference,
                    arrays={k: (F32, n) for k in ("px", "py", "pz", "mass", "ax", "ay", "az")},
                    **_line(n))
    return make


def _black_scholes(n):
    def inputs(rng, s):
        return {"S": rng.uniform(5.0, 30.0, n), "X": rng.uniform(1.0, 100.0, n),
                "T": rng.uniform(0.25, 10.0, n)}

    def cnd(d):
        k = 1 / (1 + 0.2316419 * np.abs(d))
        poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (
            -1.821255978 + k * 1.330274429))))
        c = 0.39894228040143267794 * np.exp(-0.5 * d * d) * poly
        return np.where(d > 0, 1 - c, c)

    def reference(a, s):
        S, X, T = a["S"], a["X"], a["T"]
        rate, vol = np.float32(0.02).item(), np.float32(0.30).item()
        d1 = (np.log(S / X) + (rate + 0.5 * vol * vol) * T) / (vol * np.sqrt(T))
        d2 = d1 - vol * np.sqrt(T)
        discount = np.exp(-rate * T)
        return {"call": S * cnd(d1) - X * discount * cnd(d2),
                "put": X * discount * (1 - cnd(d2)) - S * (1 - cnd(d1))}
    return dict(scalars={"n": n}, outputs=("call", "put"), inputs=inputs,
                reference=reference, **_line(n),
                arrays={k: (F32, n) for k in ("S", "X", "T", "call", "put")})


def _transpose(tiled):
    def make(width, height):
        return dict(scalars={"width": width, "height": height}, outputs=("dst",),
                    options="-D TILE=16" if tiled else "",
                    arrays={"src": (F32, width * height), "dst": (F32, width * height)},
                    reference=lambda a, s: {"dst": a["src"].reshape(height, width).T},
                    **_grid(width, height, (16, 16)))
    return make


PROGRAMS: tuple[Launch, ...] = tuple(launch for kernel in (
    _kernel("gemm.cl", "gemm", _gemm, "ni nj nk", [(1024, 1024, 1024), (2048, 2048, 512)],
            (45, 37, 29)),
    _kernel("gemm.cl", "gemm_tiled", _gemm, "ni nj nk",
            [(1024, 1024, 1024), (2048, 2048, 512)], (45, 37, 29), options="-D TILE=16"),
    _kernel("2mm.cl", "mm2_tmp", _mm2_tmp, "ni nj nk", [(1024, 1024, 1024), (512, 2048, 1024)],
            (33, 40, 21)),
    _kernel("2mm.cl", "mm2_out", _mm2_out, "ni nj nl", [(1024, 1024, 1024), (2048, 512, 1024)],
            (33, 21, 40)),
    _kernel("atax.cl", "atax_ax", _atax_ax, "m n", [(2048, 2048), (8192, 2048)], (300, 200)),
    _kernel("atax.cl", "atax_aty", _atax_aty, "m n", [(2048, 2048), (2048, 8192)], (300, 200)),
    _kernel("bicg.cl", "bicg_q", _bicg_q, "nx ny", [(2048, 2048), (4096, 4096)], (50, 700)),
    _kernel("bicg.cl", "bicg_s", _bicg_s, "nx ny", [(2048, 2048), (4096, 4096)], (300, 200)),
    _kernel("gesummv.cl", "gesummv", _gesummv, "n", [(2048,), (4096,)], (300,)),
    _kernel("mvt.cl", "mvt_x1", _mvt(False), "n", [(2048,), (4096,)], (300,)),
    _kernel("mvt.cl", "mvt_x2", _mvt(True), "n", [(2048,), (4096,)], (300,)),
    _kernel("syrk.cl", "syrk_lower", _syrk, "n m", [(1024, 512), (2048, 128)], (70, 33)),
    _kernel("syr2k.cl", "syr2k", _syr2k, "n m", [(1024, 128), (1536, 64)], (50, 20)),
    _kernel("covariance.cl", "cov_mean", _cov_mean, "m n", [(2048, 2048), (4096, 4096)],
            (100, 130)),
    _kernel("covariance.cl", "cov_center", _cov_center, "m n", [(2048, 4096), (4096, 4096)],
            (100, 130)),
    _kernel("covariance.cl", "cov_covar", _cov_covar, "m n", [(128, 256), (256, 384)],
            (60, 90)),
    _kernel("correlation.cl", "corr_stddev", _corr_stddev, "m n",
            [(2048, 2048), (4096, 4096)], (100, 130)),
    _kernel("correlation.cl", "corr_normalize", _corr_normalize, "m n",
            [(2048, 4096), (4096, 4096)], (100, 130)),
    _kernel("correlation.cl", "corr_corr", _corr_corr, "m n", [(128, 256), (256, 384)],
            (60, 90)),
    _kernel("gramschmidt.cl", "gs_norm", _gs_norm, "m n k",
            [(262144, 8, 0), (1048576, 8, 2)], (1000, 6, 1)),
    _kernel("gramschmidt.cl", "gs_normalize", _gs_normalize, "m n k",
            [(1048576, 8, 2), (4194304, 4, 1)], (1000, 6, 1)),
    _kernel("gramschmidt.cl", "gs_update", _gs_update, "m n k",
            [(2048, 2048, 1), (4096, 4096, 3)], (90, 70, 2)),
    _kernel("lu.cl", "lu_update", _lu_update, "n k", [(2048, 1), (4096, 100)], (75, 3)),
    _kernel("conv2d.cl", "conv2d", _conv2d, "ni nj", [(4096, 4096), (8192, 4096)], (70, 90)),
    _kernel("conv3d.cl", "conv3d", _conv3d, "ni nj nk", [(256, 256, 256), (384, 256, 256)],
            (12, 20, 40)),
    _kernel("fdtd2d.cl", "fdtd_ey", _fdtd_ey, "nx ny", [(2048, 4096), (4096, 4096)], (60, 70)),
    _kernel("fdtd2d.cl", "fdtd_ex", _fdtd_ex, "nx ny", [(2048, 4096), (4096, 4096)], (60, 70)),
    _kernel("fdtd2d.cl", "fdtd_hz", _fdtd_hz, "nx ny", [(2048, 4096), (4096, 4096)], (60, 70)),
    _kernel("jacobi.cl", "jacobi1d", _jacobi1d, "n", [(2**24,), (2**25,)], (10000,)),
    _kernel("jacobi.cl", "jacobi2d", _jacobi2d, "n m", [(4096, 4096), (8192, 4096)], (60, 70)),
    _kernel("reduce.cl", "reduce_partial", _reduce_partial, "n groups",
            [(2**24, 1024), (2**25, 2048)], (100000, 8), options=_DOUBLE),
    _kernel("reduce.cl", "reduce_final", _reduce_final, "count", [(2**18,), (2**20,)],
            (5000,), options=_DOUBLE),
    _kernel("scan.cl", "scan_block", _scan_block, "n", [(2**24,), (2**26,)], (5000,)),
    _kernel("scan.cl", "scan_add", _scan_add, "n", [(2**24,), (2**26,)], (5000,)),
    _kernel("softmax.cl", "softmax_naive", _softmax_naive, "rows cols",
            [(16384, 256), (65536, 256)], (300, 50)),
    _kernel("softmax.cl", "softmax_rows", _softmax_rows, "rows cols",
            [(16384, 1024), (4096, 4096)], (20, 700)),
    _kernel("spmv.cl", "spmv_csr", _spmv, "rows", [(262144,), (1048576,)], (1000,)),
    _kernel("filters.cl", "box_blur", _box_blur, "width height",
            [(4096, 4096), (8192, 4096)], (70, 45)),
    _kernel("filters.cl", "gaussian5x5", _gaussian5x5, "width height",
            [(4096, 4096), (8192, 4096)], (70, 45)),
    _kernel("filters.cl", "sobel", _sobel, "width height", [(4096, 4096), (8192, 4096)],
            (70, 45)),
    _kernel("resize.cl", "resize_bilinear", _resize, "in_w in_h out_w out_h",
            [(2048, 2048, 4096, 4096), (3072, 3072, 2048, 2048)], (50, 40, 77, 61)),
    _kernel("kmeans.cl", "kmeans_assign", _kmeans, "n k d",
            [(524288, 32, 16), (1048576, 64, 32)], (1000, 5, 4)),
    _kernel("knn.cl", "knn_distances", _knn, "n nq d", [(131072, 256, 16), (65536, 512, 32)],
            (500, 7, 5)),
    _kernel("nbody.cl", "nbody_accel", _nbody(False), "n", [(8192,), (16384,)], (700,)),
    _kernel("nbody.cl", "nbody_tiled", _nbody(True), "n", [(8192,), (16384,)], (700,)),
    _kernel("blackscholes.cl", "black_scholes", _black_scholes, "n", [(2**22,), (2**23,)],
            (10000,)),
    _kernel("transpose.cl", "transpose_naive", _transpose(False), "width height",
            [(4096, 4096), (8192, 4096)], (70, 45)),
    _kernel("transpose.cl", "transpose_tiled", _transpose(True), "width height",
            [(4096, 4096), (8192, 4096)], (70, 45)),
) for launch in kernel)

# }}}
