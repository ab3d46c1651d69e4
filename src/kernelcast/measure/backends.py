"""Backends that compile, run and time generated kernels: OpenCL (pyopencl) and CUDA (cupy).

Both take a GeneratedKernel (kernelcast.measure.codegen), compile it with the vendor's
compiler, allocate its arrays on the device (random inputs in [0.5, 1.5), outputs poisoned
with NaN), launch it with device events around each launch, read arrays back for checking,
and free everything after each case. cupy is imported only when the CUDA backend is made.

Failures raise CompileError, OutOfMemory or LaunchError, which a campaign records as the
statuses compile_error, out_of_memory and launch_error.

Public names: Backend, OpenCLBackend, CudaBackend, make_backend, check_fits, CompileError,
OutOfMemory, LaunchError.
"""

from __future__ import annotations

import numpy as np

from kernelcast.errors import KernelcastError, MissingDependencyError
from kernelcast.measure.arrays import ArraySpec
from kernelcast.measure.devices import DeviceInfo, find_device


class CompileError(KernelcastError):
    """The device compiler rejected the generated code."""


class OutOfMemory(KernelcastError):
    """The arrays of a case do not fit on the device."""


class LaunchError(KernelcastError):
    """The kernel failed while running."""


def check_fits(device: DeviceInfo, specs: list[ArraySpec]) -> None:
    """Raise OutOfMemory unless the arrays *specs* fit in the memory of *device*."""
    total = sum(s.nbytes for s in specs)
    largest = max((s.nbytes for s in specs), default=0)
    if total > device.global_mem_bytes or largest > device.max_alloc_bytes:
        raise OutOfMemory(
            f"needs {total / 2**30:.2f} GiB (largest array {largest / 2**30:.2f} GiB); "
            f"{device.name} has {device.global_mem_bytes / 2**30:.2f} GiB "
            f"(largest allocation {device.max_alloc_bytes / 2**30:.2f} GiB)")


def _host_view(flat: np.ndarray, spec: ArraySpec) -> np.ndarray:
    item = spec.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat, spec.shape,
                                           tuple(s * item for s in spec.strides))


class Backend:
    """Common interface; see the module docstring."""

    name = ""
    device: DeviceInfo
    build_options = ""

    def compile(self, kernel):
        raise NotImplementedError

    def allocate(self, specs: list[ArraySpec], scalars: dict, seed: int = 0) -> dict:
        raise NotImplementedError

    def time_launches(self, compiled, kernel, args: dict, params: dict,
                      count: int) -> list[float]:
        raise NotImplementedError

    def read(self, args: dict, specs: list[ArraySpec]) -> dict:
        raise NotImplementedError

    def release(self, args: dict) -> None:
        args.clear()

    @property
    def identity(self) -> dict:
        return {"backend": self.name, "device": self.device.name,
                "driver": self.device.driver, "compute_units": self.device.compute_units}


class OpenCLBackend(Backend):
    name = "opencl"

    def __init__(self, device: DeviceInfo, build_options: str = ""):
        import pyopencl as cl

        self._cl = cl
        self.device = device
        platform = next(p for p in cl.get_platforms() if p.name.strip() == device.platform)
        cl_device = platform.get_devices()[device.index]
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.build_options = build_options

    def compile(self, kernel):
        cl = self._cl
        try:
            program = cl.Program(self.context, kernel.code).build(
                options=self.build_options.split())
        except cl.Error as err:
            raise CompileError(f"OpenCL build failed: {err}") from None
        return getattr(program, kernel.name)

    def allocate(self, specs, scalars, seed=0):
        cl = self._cl
        import pyopencl.array as cla
        import pyopencl.clrandom as clrandom

        check_fits(self.device, specs)
        generator = clrandom.PhiloxGenerator(self.context, seed=seed)
        args = {}
        try:
            for spec in specs:
                flat = cla.empty(self.queue, max(spec.size, 1), spec.dtype)
                if spec.written:
                    flat.fill(np.nan if spec.dtype.kind == "f" else -1)
                elif spec.dtype.kind == "f":
                    generator.fill_uniform(flat, a=0.5, b=1.5)
                else:
                    flat.fill(1)
                args[spec.name] = flat
            self.queue.finish()
        except (cl.MemoryError, cl.RuntimeError) as err:
            args.clear()
            raise OutOfMemory(f"allocation failed: {err}") from None
        args.update(scalars)
        return args

    def time_launches(self, compiled, kernel, args, params, count):
        cl = self._cl
        grid, block = kernel.launch_sizes(params)
        global_size = tuple(g * b for g, b in zip(grid, block, strict=True))
        values = [args[a.name].data if a.is_array else args[a.name] for a in kernel.arguments]
        try:
            compiled.set_args(*values)
            events = [cl.enqueue_nd_range_kernel(self.queue, compiled, global_size, block)
                      for _ in range(count)]
            cl.wait_for_events(events)
            return [(e.profile.end - e.profile.start) * 1e-9 for e in events]
        except cl.Error as err:
            if "OUT_OF_RESOURCES" in str(err) or "ALLOCATION_FAILURE" in str(err):
                raise OutOfMemory(f"launch ran out of resources: {err}") from None
            raise LaunchError(f"launch failed: {err}") from None

    def read(self, args, specs):
        return {s.name: _host_view(args[s.name].get(), s) for s in specs}


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, device: DeviceInfo, build_options: str = ""):
        try:
            import cupy
        except ImportError:
            raise MissingDependencyError(
                "the CUDA backend needs cupy: pip install 'kernelcast[cuda]'") from None
        self._cupy = cupy
        self.device = device
        cupy.cuda.Device(device.index).use()
        self.build_options = build_options

    def compile(self, kernel):
        cupy = self._cupy
        try:
            module = cupy.RawModule(code=kernel.code,
                                    options=tuple(self.build_options.split()))
            return module.get_function(kernel.name)
        except cupy.cuda.compiler.CompileException as err:
            raise CompileError(f"CUDA compile failed: {err}") from None

    def allocate(self, specs, scalars, seed=0):
        cupy = self._cupy
        check_fits(self.device, specs)
        rng = cupy.random.default_rng(seed)
        args = {}
        try:
            for spec in specs:
                if spec.written:
                    flat = cupy.full(max(spec.size, 1),
                                     np.nan if spec.dtype.kind == "f" else -1, spec.dtype)
                elif spec.dtype.kind == "f":
                    flat = (rng.random(max(spec.size, 1), dtype=spec.dtype) + 0.5).astype(
                        spec.dtype)
                else:
                    flat = cupy.ones(max(spec.size, 1), spec.dtype)
                args[spec.name] = flat
            cupy.cuda.Device().synchronize()
        except cupy.cuda.memory.OutOfMemoryError as err:
            self.release(args)
            raise OutOfMemory(f"allocation failed: {err}") from None
        args.update(scalars)
        return args

    def time_launches(self, compiled, kernel, args, params, count):
        cupy = self._cupy
        grid, block = kernel.launch_sizes(params)
        grid = (tuple(grid) + (1, 1))[:3]
        block = (tuple(block) + (1, 1))[:3]
        values = tuple(args[a.name] for a in kernel.arguments)
        pairs = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(count)]
        try:
            for start, end in pairs:
                start.record()
                compiled(grid, block, values)
                end.record()
            pairs[-1][1].synchronize()
        except cupy.cuda.driver.CUDADriverError as err:
            raise LaunchError(f"launch failed: {err}") from None
        return [cupy.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in pairs]

    def read(self, args, specs):
        return {s.name: _host_view(args[s.name].get(), s) for s in specs}

    def release(self, args):
        args.clear()
        self._cupy.get_default_memory_pool().free_all_blocks()


def make_backend(backend: str = "opencl", device: str | None = None,
                 build_options: str = "") -> Backend:
    """A backend on the device whose name contains *device* (the best one if None)."""
    info = find_device(device, backend)
    if backend == "cuda":
        return CudaBackend(info, build_options)
    return OpenCLBackend(info, build_options)
