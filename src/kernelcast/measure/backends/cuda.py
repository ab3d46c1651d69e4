"""The CUDA backend (cupy): Loopy's CUDA target compiled with NVRTC, timed with CUDA events.

cupy is imported when a backend is made, not with this module; without it making one raises
MissingDependencyError.

Public names: CudaBackend, compiled_function.
"""

from __future__ import annotations

import numpy as np

from kernelcast.errors import MissingDependencyError
from kernelcast.measure.backends.base import (
    Backend,
    CompileError,
    LaunchError,
    OutOfMemory,
    captured_stderr,
    check_fits,
    compiler_log,
    host_view,
)
from kernelcast.measure.devices import DeviceInfo


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
        with captured_stderr() as printed:
            try:
                return compiled_function(kernel, self.build_options)
            except cupy.cuda.compiler.CompileException as err:
                failure = str(err)
        raise CompileError(compiler_log("CUDA compile failed", failure, printed[0]))

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
        return {s.name: host_view(args[s.name].get(), s) for s in specs}

    def release(self, args):
        args.clear()
        self._cupy.get_default_memory_pool().free_all_blocks()


def compiled_function(kernel, build_options: str = ""):
    """*kernel*'s function, compiled by NVRTC through cupy, which keeps the binary in its
    kernel cache: a process that compiles the same code with the same options later
    finds it there (a campaign's workers compile ahead of the process that times)."""
    import cupy

    return cupy.RawModule(code=kernel.code, options=tuple(build_options.split())
                          ).get_function(kernel.name)
