"""The OpenCL backend (pyopencl), on any device the ICD loader offers.

pyopencl is imported when a backend is made, not with this module; without it making one
raises MissingDependencyError.

Public names: OpenCLBackend.
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


class OpenCLBackend(Backend):
    name = "opencl"

    def __init__(self, device: DeviceInfo, build_options: str = ""):
        try:
            import pyopencl as cl
        except ImportError:
            raise MissingDependencyError(
                "the OpenCL backend needs pyopencl: pip install pyopencl") from None

        self._cl = cl
        self.device = device
        platform = next(p for p in cl.get_platforms() if p.name.strip() == device.platform)
        cl_device = platform.get_devices()[device.index]
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.build_options = build_options
        self._generator = None

    def _random(self, seed):
        """pyopencl's Philox generator in the state ``PhiloxGenerator(context, seed=seed)``
        starts in. One generator serves every allocation: a generator builds its OpenCL
        program on first use, a tenth of a second a build on PoCL."""
        from pyopencl import clrandom

        fresh = clrandom.PhiloxGenerator(self.context, seed=seed)
        if self._generator is None:
            self._generator = fresh
        self._generator.key, self._generator.counter = fresh.key, fresh.counter
        return self._generator

    def compile(self, kernel):
        cl = self._cl
        with captured_stderr() as printed:
            try:
                program = cl.Program(self.context, kernel.code).build(
                    options=self.build_options.split())
                failure = None
            except cl.Error as err:
                failure = str(err)
        if failure is not None:
            raise CompileError(compiler_log("OpenCL build failed", failure, printed[0]))
        return getattr(program, kernel.name)

    def allocate(self, specs, scalars, seed=0):
        cl = self._cl
        import pyopencl.array as cla

        check_fits(self.device, specs)
        generator = self._random(seed)
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

    def time_copies(self, nbytes: int, direction: str, **timing):
        """Copies of *nbytes* between host and device ("to" or "from" the device) timed
        by the protocol (*timing*: runs, drop, tolerance, retries)."""
        from kernelcast.measure import protocol

        cl = self._cl
        host = np.ones(max(nbytes // 4, 1), np.float32)
        try:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, host.nbytes)
        except (cl.MemoryError, cl.RuntimeError) as err:
            raise OutOfMemory(f"allocation failed: {err}") from None

        def run(count):
            events = [cl.enqueue_copy(self.queue, buf, host) if direction == "to"
                      else cl.enqueue_copy(self.queue, host, buf) for _ in range(count)]
            cl.wait_for_events(events)
            return [(e.profile.end - e.profile.start) * 1e-9 for e in events]

        try:
            return protocol.time_with_protocol(run, **timing)
        finally:
            buf.release()

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
        return {s.name: host_view(args[s.name].get(), s) for s in specs}
