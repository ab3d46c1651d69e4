"""Profile a Loopy kernel under Nsight Compute: ``profile_kernel(spec, params)`` runs
``ncu --set full --page raw --csv`` on a process that launches the kernel once through
kernelcast's CUDA backend (Loopy's CUDA target compiled with NVRTC, arguments filled as
a measurement fills them) and returns that launch's profile. Needs ncu on PATH, cupy and
an NVIDIA GPU whose counters the user may read; without them a one-line error says so.

``python -m kernelcast.measure.ncu FILE.py:FACTORY NAME=SIZE ...`` is the process ncu
profiles; kernelcast.frontends.profiler reads what ncu writes.

Public names: profile_kernel, launch_once.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from kernelcast.errors import KernelcastError, UsageError
from kernelcast.frontends.arguments import sizes


def _prepared(spec: str, params: dict):
    from kernelcast.frontends.files import load_kernel
    from kernelcast.measure.arrays import check_sizes, size_parameters
    from kernelcast.measure.codegen import generate

    knl = load_kernel(spec)
    missing = [p for p in size_parameters(knl) if p not in params]
    if missing:
        raise UsageError(f"{spec} needs sizes for {', '.join(missing)}: "
                         f"--param {' '.join(f'{p}=SIZE' for p in missing)}")
    check_sizes(knl, params)
    return knl, generate(knl, "cuda")


def launch_once(spec: str, params: dict) -> str:
    """Launch the kernel of *spec* once at *params* on the best CUDA device; its name."""
    import numpy as np

    from kernelcast.measure.arrays import array_specs, scalar_arguments, typed_kernel
    from kernelcast.measure.backends.cuda import CudaBackend
    from kernelcast.measure.devices import find_device

    knl, generated = _prepared(spec, params)
    backend = CudaBackend(find_device(None, "cuda"))
    compiled = backend.compile(generated)
    specs, scalars = array_specs(typed_kernel(knl), params)
    values = scalar_arguments(scalars, params, np.random.default_rng(0))
    args = backend.allocate(specs, values, seed=0)
    try:
        backend.time_launches(compiled, generated, args, params, 1)
    finally:
        backend.release(args)
    return generated.name


def profile_kernel(spec: str, params: dict, ncu: str = "ncu", on_start=None) -> list:
    """The Nsight Compute launches (kernelcast.frontends.profiler.Launch) of one launch
    of *spec* at *params*; *on_start* is called once ncu starts (to tell a user)."""
    from kernelcast.frontends.profiler.ncu import read_ncu_csv

    _, generated = _prepared(spec, params)  # a bad kernel or size fails before ncu runs
    found = shutil.which(ncu)
    if found is None:
        raise KernelcastError(f"profiling {spec} needs Nsight Compute ({ncu} is not on PATH) "
                              "and an NVIDIA GPU; profile where they are (docs/criteria.md) "
                              "and pass advise the CSV")
    command = [found, "--set", "full", "--page", "raw", "--csv", "--kernel-name",
               f"regex:^{generated.name}$", sys.executable, "-m", __name__, spec,
               *(f"{k}={v}" for k, v in params.items())]
    if on_start is not None:
        on_start()
    done = subprocess.run(command, capture_output=True, text=True)
    lines = [x for x in (done.stderr + done.stdout).splitlines()
             if x.startswith(("==ERROR==", "kernelcast"))]
    if done.returncode != 0 or lines:
        raise KernelcastError(f"ncu could not profile {spec}: "
                              + ("; ".join(lines[:2]) or f"exit status {done.returncode}"))
    launches = [x for x in read_ncu_csv(done.stdout, f"ncu of {spec}")
                if x.kernel == generated.name]
    if not launches:
        raise KernelcastError(f"ncu profiled no launch of {generated.name} ({spec})")
    return launches


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        launch_once(argv[0], sizes(argv[1:], "NAME=SIZE"))
    except (KernelcastError, IndexError) as err:
        print(f"kernelcast: {err or 'usage: ncu.py FILE.py:FACTORY NAME=SIZE ...'}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
