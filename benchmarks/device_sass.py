"""The machine code (SASS) NVIDIA's compilers make of a few suite kernels, on both backends.

PTX (benchmarks/device_ptx.py) is not what runs: ``ptxas`` and the driver's JIT turn a
short branch into predicated instructions, and PTX does not show which branches survive.
This dumps the SASS that runs:

- OpenCL: the program NVIDIA's OpenCL builds, taken from the records its build adds to
  the driver's JIT cache (``CUDA_CACHE_PATH``; a fresh folder, so that nothing is served
  from an earlier build);
- CUDA: the kernel compiled as the CUDA backend compiles it (see ``cuda``).

Writes OUTDIR/sass-opencl.txt and sass-cuda.txt (cuobjdump's listing, one function after
another) and prints, per kernel and backend, the convergence
barriers (``BSSY``: a branch that stays a branch), the shared-memory and global loads,
how many of them are predicated, and the special-function instructions. Needs the NVIDIA
GPU, cupy, ``nvcc`` and ``cuobjdump``. Run on the device:

    CUDA_CACHE_PATH=$(mktemp -d) python3 benchmarks/device_sass.py OUTDIR
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyopencl as cl

from kernelcast.measure.codegen import generate
from kernelcast.suites.extension import chain, guarded, halo, intensity, parallelism
from kernelcast.suites.kernels import convolution, finite_difference, nbody

KERNELS = {"nbody": nbody(), "convolution": convolution(),
           "finite_difference": finite_difference(),
           **{f"guarded_{v}": guarded(v) for v in ("local", "special", "global", "poly4",
                                                   "poly16", "tiled16")},
           "guarded_special_f64": guarded("special", dtype=np.float64),
           **{f"chain_{v}": chain(v) for v in ("fma", "special", "local")},
           "intensity_local1": intensity("local1"), "parallelism_local": parallelism("local"),
           "halo_r2": halo("r2", (32, 8))}

_FUNCTION = re.compile(r"^\s*Function : (\S+)", re.M)


def sass_of(path: Path) -> dict[str, str]:
    """cuobjdump's SASS listing of a cubin (or an ELF inside a cache file), by function."""
    run = subprocess.run(["cuobjdump", "-sass", str(path)], capture_output=True, text=True)
    text = compact(run.stdout)
    starts = [(m.start(), m.group(1)) for m in _FUNCTION.finditer(text)]
    return {name: text[start:(starts[i + 1][0] if i + 1 < len(starts) else len(text))]
            for i, (start, name) in enumerate(starts)}


def compact(listing: str) -> str:
    """cuobjdump's listing without the instructions' encodings (every other line)."""
    lines = (re.sub(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$", "", line)
             for line in listing.splitlines())
    return "".join(f"{line}\n" for line in lines if line.strip())


def elf_images(folder: Path):
    """ELF images found in the files under *folder* (the driver's JIT cache keeps them
    inside its own records)."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for at in [m.start() for m in re.finditer(rb"\x7fELF", data)]:
            yield path, data[at:]


def summary(sass: str) -> str:
    """Convergence barriers, loads (and how many are predicated) and special functions."""
    lines = [line for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", line)]

    def count(pattern, predicated=False):
        guard = r"@!?P\d\s+" if predicated else r"(@!?P\d\s+)?"
        rx = re.compile(r"/\*[0-9a-f]{4}\*/\s+" + guard + pattern)
        return sum(1 for line in lines if rx.search(line))

    return (f"BSSY {count('BSSY')}, LDS {count('LDS')} ({count('LDS', True)} predicated), "
            f"LDG {count('LDG')} ({count('LDG', True)} predicated), MUFU {count('MUFU')}, "
            f"instructions {len(lines)}")


def opencl(out: Path) -> dict[str, str]:
    platform = next(p for p in cl.get_platforms() if "NVIDIA" in p.name)
    ctx = cl.Context(platform.get_devices())
    cache = Path(os.environ.get("CUDA_CACHE_PATH", Path.home() / ".nv" / "ComputeCache"))
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, knl in KERNELS.items():
            code = generate(knl, "opencl")
            before = set(cache.rglob("*"))
            cl.Program(ctx, code.code).build().all_kernels()  # the driver JIT-compiles it
            new = Path(tmp) / name
            new.mkdir()
            for path in set(cache.rglob("*")) - before:  # this build's cache records
                if path.is_file():
                    (new / path.name).write_bytes(path.read_bytes())
            for i, (_path, image) in enumerate(elf_images(new)):
                elf = Path(tmp) / f"{name}{i}.cubin"
                elf.write_bytes(image)
                found.update({f"{fn} ({name})": text for fn, text in sass_of(elf).items()
                              if fn == code.name})  # not the driver's built-in kernels
    _write(out / "sass-opencl.txt", found)
    return found


def cuda(out: Path) -> dict[str, str]:
    """cupy adds -ftz=true to every NVRTC compile (cupy.cuda.compiler), so the CUDA backend
    runs flush-to-zero code: nvcc, the same NVVM and ptxas as the device's NVRTC, with that
    option gives the same machine code (cupy's cache holds it in a form cuobjdump does not
    read). To show it, ``guarded special`` is timed as cupy builds it and as nvcc does
    with and without flush-to-zero."""
    import cupy

    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, knl in KERNELS.items():
            code = generate(knl, "cuda")
            src = Path(tmp) / f"{name}.cu"
            src.write_text(code.code)
            cubin = src.with_suffix(".cubin")
            subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-ftz=true", "-o", str(cubin),
                            str(src)], check=True)
            found.update({f"{fn} ({name})": text for fn, text in sass_of(cubin).items()})
        knl = guarded("special")
        code = generate(knl, "cuda").code
        a = cupy.random.random(512, dtype=np.float32) + 0.5
        out_array = cupy.empty(512, dtype=np.float32)
        args = (out_array, a, np.int32(4096), np.int32(2))
        plain = Path(tmp) / "plain.cubin"  # nvcc's default, as NVRTC's: -ftz=false
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(plain),
                        str(Path(tmp) / "guarded_special.cu")], check=True)
        for what, module in (("cupy", cupy.RawModule(code=code)),
                             ("nvcc -ftz=true", cupy.RawModule(
                                 path=str(Path(tmp) / "guarded_special.cubin"))),
                             ("nvcc -ftz=false", cupy.RawModule(path=str(plain)))):
            print(f"guarded special, m = 4096, 2 groups, through {what}: "
                  f"{_time(module.get_function('guarded_special'), args) * 1e6:.1f} µs")
    _write(out / "sass-cuda.txt", found)
    return found


def _write(path: Path, functions: dict[str, str]) -> None:
    path.write_text("".join(f"// {label}\n{text}" for label, text in functions.items()))


def _time(function, args) -> float:
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(30):
        start.record()
        function((2,), (256,), args)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e-3)
    return min(times[4:])


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for step in (opencl, cuda):
        try:
            results[step.__name__] = step(out)
        except Exception as err:  # one backend's failure must not lose the other's
            print(f"{step.__name__} failed: {type(err).__name__}: {err}")
    for backend, functions in results.items():
        print(f"\n{backend}: {len(functions)} functions")
        for name, sass in sorted(functions.items()):
            print(f"  {name}: {summary(sass)}")


if __name__ == "__main__":
    main()
