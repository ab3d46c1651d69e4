"""Code generation for the backends: CUDA code for every suite kernel (no GPU needed),
argument order, rsqrt for CUDA, launch geometry, and OpenCL code that PoCL compiles."""

import re

import loopy as lp
import numpy as np
from kernel_zoo import two_launches
import pytest

from kernelcast.errors import UnsupportedKernelError
from kernelcast.measure.arrays import array_specs
from kernelcast.measure.codegen import generate
from kernelcast.suites import kernels
from kernelcast.suites.paper import MEASUREMENT, TEST
from kernelcast.suites.validation import VALIDATION


def _one_case_per_kernel():
    """Each class × variant × precision of the three suites once, at its checking sizes."""
    chosen = {}
    for suite in (MEASUREMENT, TEST, VALIDATION):
        for case in suite.cases():
            chosen.setdefault(case.kernel_name.rsplit("/", 1)[0], case)
    return [case.check_case() for case in chosen.values()]


CASES = _one_case_per_kernel()


def _signature(code: str, name: str) -> list[str]:
    """The parameter declarations of kernel *name* in generated C code."""
    match = re.search(rf"\b{re.escape(name)}\(([^)]*)\)\s*\{{", code)
    assert match, f"no definition of {name} in\n{code}"
    return [p.strip() for p in match.group(1).split(",")] if match.group(1).strip() else []


def test_every_kernel_of_the_suites_is_covered():
    # one kernel per class × variant × precision (one for a class without float data)
    expected = sum(len(kclass.variants) * max(len(kclass.dtypes), 1)
                   for suite in (MEASUREMENT, TEST, VALIDATION) for kclass in suite.classes)
    assert len({(c.class_name, c.variant, c.dtype) for c in CASES}) == len(CASES) == expected


@pytest.mark.parametrize("case", CASES, ids=[c.kernel_name for c in CASES])
def test_cuda_code_for_every_suite_kernel(case):
    knl = case.kernel()
    cuda = generate(knl, "cuda")
    assert cuda.target == "cuda"
    assert cuda.name == knl.default_entrypoint.name
    assert 'extern "C" __global__ void __launch_bounds__' in cuda.code
    assert "__kernel" not in cuda.code and "get_local_id" not in cuda.code
    params = _signature(cuda.code, cuda.name)
    assert len(params) == len(cuda.arguments)
    for param, arg in zip(params, cuda.arguments, strict=True):
        assert re.search(rf"\b{re.escape(arg.name)}$", param), (param, arg)
        assert ("*" in param) == arg.is_array
    # the same arguments, in the same order, as the OpenCL code
    opencl = generate(knl, "opencl")
    assert opencl.arguments == cuda.arguments
    assert (opencl.grid, opencl.block) == (cuda.grid, cuda.block)
    assert opencl.code_sha256 != cuda.code_sha256
    # every array the kernel declares is an argument, with its dtype
    specs = {s.name: s for s in array_specs(knl, case.params)[0]}
    arrays = {a.name: a.dtype for a in cuda.arguments if a.is_array}
    assert arrays == {name: spec.dtype for name, spec in specs.items()}
    # a launch covers the checking sizes
    grid, block = cuda.launch_sizes(case.params)
    assert len(grid) == len(block) >= 1
    assert all(g >= 1 for g in grid) and all(b >= 1 for b in block)


@pytest.mark.parametrize(("dtype", "function"), [(np.float32, "rsqrtf"),
                                                 (np.float64, "rsqrt")])
def test_rsqrt_maps_to_cudas_function_for_the_precision(dtype, function):
    code = generate(kernels.arithmetic("rsqrt", (16, 16), dtype), "cuda").code
    calls = re.findall(r"\b(rsqrtf?)\(", code)
    assert len(calls) == 6 and set(calls) == {function}
    opencl = generate(kernels.arithmetic("rsqrt", (16, 16), dtype), "opencl").code
    assert set(re.findall(r"\b(rsqrtf?)\(", opencl)) == {"rsqrt"}


def test_nbody_uses_rsqrtf_in_cuda():
    assert "rsqrtf(" in generate(kernels.nbody(256), "cuda").code


def test_launch_sizes_of_a_kernel_with_three_group_axes_and_two_local_axes():
    conv = generate(kernels.convolution((16, 16)), "cuda")
    assert len(conv.grid) == 3 and len(conv.block) == 2
    grid, block = conv.launch_sizes({"n": 21})
    assert grid == (2, 2, 3)  # ceil(21/16) tiles per image axis, one group per filter
    assert block == (16, 16, 1)  # padded to as many axes as the grid
    assert conv.launch_sizes({"n": 32}) == ((2, 2, 3), (16, 16, 1))
    assert conv.launch_sizes({"n": 33}) == ((3, 3, 3), (16, 16, 1))
    skewed = generate(kernels.transpose("read_strided", (16, 12)), "opencl")
    assert skewed.launch_sizes({"n": 45}) == ((3, 4), (16, 12))


@pytest.mark.parametrize("n", [1, 255, 256, 257, 1000])
def test_launch_sizes_pad_a_1d_kernel_up_to_whole_groups(n):
    grid, block = generate(kernels.global_access("copy", 256), "opencl").launch_sizes({"n": n})
    assert block == (256,)
    assert grid == (-(-n // 256),)
    total = grid[0] * block[0]
    assert total >= n and total % 256 == 0 and total - n < 256


def test_launch_sizes_of_a_kernel_without_group_axes():
    knl = lp.make_kernel("{[i]: 0<=i<n}", "out[i] = 2*a[i]",
                         [lp.GlobalArg("a, out", np.float32, shape="n"), "..."],
                         name="serial", lang_version=(2018, 2))
    assert generate(knl, "opencl").launch_sizes({"n": 10}) == ((1,), (1,))


def test_a_loop_kernel_is_accepted_and_unknown_targets_refused():
    knl = kernels.scale(64)
    assert generate(knl.default_entrypoint).code == generate(knl).code
    with pytest.raises(ValueError, match="unknown target 'hip'"):
        generate(knl, "hip")


def test_kernels_needing_two_launches_are_refused():
    knl = two_launches()
    with pytest.raises(UnsupportedKernelError, match="needs 2 launches"):
        generate(knl, "opencl")


@pytest.mark.parametrize("build", [lambda: kernels.arithmetic("rsqrt", (16, 16), np.float64),
                                   lambda: kernels.convolution((16, 16)),
                                   lambda: kernels.filled_stride(3, 256)],
                         ids=["arith_rsqrt_f64", "convolution", "filled_stride3"])
def test_opencl_code_compiles_on_pocl(pocl, build):
    generated = generate(build(), "opencl")
    assert generated.target == "opencl" and "__kernel" in generated.code
    compiled = pocl.compile(generated)
    assert compiled.function_name == generated.name
    assert compiled.num_args == len(generated.arguments)
