"""Suites of kernel cases: what to run, at which sizes and group sizes (paper §4.1, §4.2).

A KernelClass is one of the paper's kernel classes: its variants, its size cases as a
function of the base exponent p, the p values the paper allows, its group sizes and its
precisions. A Suite is a named tuple of classes; ``Suite.cases`` enumerates Case objects,
each one kernel at one size, ready to build, run and check against its NumPy reference.

Public names: GROUP_SETS, Case, KernelClass, Suite, choose_p.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from kernelcast.errors import KernelcastError

# §4.1: the six group-size sets, (x, y) with x along local axis 0.
GROUP_SETS = {
    "1-D Small": ((192, 1), (224, 1), (256, 1)),
    "1-D Med": ((128, 1), (256, 1), (384, 1)),
    "1-D Large": ((256, 1), (384, 1), (512, 1)),
    "2-D Small": ((16, 12), (16, 14), (16, 16)),
    "2-D Med": ((16, 12), (16, 16), (32, 16)),
    "2-D Large": ((16, 16), (24, 16), (32, 16)),
}

DTYPES = {"float32": np.float32, "float64": np.float64}


@dataclass(frozen=True)
class Case:
    """One kernel of a suite at one size: class, variant, precision, group size, parameters.

    ``t`` is the index of the size case within its class (the paper's t, or the position
    in the (k, t) grid of the arithmetic class).
    """

    suite: str
    kclass: "KernelClass" = field(repr=False, compare=False)
    variant: str
    dtype: str | None
    group_size: tuple[int, int]
    p: int
    t: int
    params: dict = field(hash=False)

    @property
    def class_name(self) -> str:
        return self.kclass.name

    @property
    def name(self) -> str:
        """A readable unique name, e.g. ``scale_add[2]/float32/g256x1/n=1048576``."""
        parts = [self.kclass.name + (f"[{self.variant}]" if self.variant else "")]
        if self.dtype:
            parts.append(self.dtype)
        parts.append("g{}x{}".format(*self.group_size))
        parts.append(",".join(f"{k}={v}" for k, v in sorted(self.params.items())))
        return "/".join(parts)

    @property
    def kernel_name(self) -> str:
        """The name of the compiled kernel, shared by all sizes of the case."""
        return self.name.rsplit("/", 1)[0]

    def kernel(self):
        """The Loopy TranslationUnit of this case (built fresh on each call)."""
        return self.kclass.build(self)

    def reference(self, args: dict) -> dict:
        """Expected outputs for the arguments *args* (see kernelcast.suites.references)."""
        from kernelcast.suites.references import REFERENCES

        reference = self.kclass.reference
        return (reference if callable(reference) else REFERENCES[reference])(self, args)

    def with_params(self, params: dict, t: int = 0) -> Case:
        """The same kernel at other sizes."""
        return Case(self.suite, self.kclass, self.variant, self.dtype, self.group_size,
                    self.p, t, dict(params))

    def check_case(self) -> Case:
        """The same kernel at its class's small checking sizes (those of its parameters:
        variants of a class may take different ones)."""
        taken = self.kclass.sizes(self.variant, self.p, self.group_size)[0]
        return self.with_params({k: v for k, v in self.kclass.check_params.items()
                                 if k in taken})


def one_d(case) -> int:
    """The work-items per group of a 1-D class's case, whose group size is (g, 1)."""
    gx, gy = case.group_size
    if gy != 1:
        raise KernelcastError(f"{case.class_name} is a 1-D kernel class: its group sizes are "
                              f"(g, 1), not {tuple(case.group_size)}")
    return int(gx)


@dataclass(frozen=True)
class KernelClass:
    """One kernel class of a suite.

    *build(case)* returns the Loopy kernel; *sizes(variant, p, group)* returns the
    parameter dicts of the size cases in order of t for a group size; *p_choices* are the base exponents the paper
    allows; *group_set* names the entry of GROUP_SETS used (the paper's choice for its
    newest GPU, the Titan X) unless *group_sizes* fixes the sizes; *dtypes* are the
    precisions (empty for a kernel with no floating-point data); *check_params* are small
    sizes, not multiples of the group sizes, at which a kernel is checked against its
    reference before it is timed. *source(case)*, where given, is the OpenCL C source that
    is compiled and timed on OpenCL devices in place of the code Loopy generates (a kernel
    written as OpenCL, whose Loopy twin computes the same and declares its arguments);
    *sized_code* says the sizes are part of the code, so a check at other sizes compiles
    a kernel of its own.
    """

    name: str
    section: str
    variants: tuple[str, ...]
    build: Callable[[Case], object]
    sizes: Callable[[str, int, tuple[int, int]], list[dict]]
    p_choices: tuple[int, ...]
    group_set: str | None = None
    group_sizes: tuple[tuple[int, int], ...] = ()
    dtypes: tuple[str, ...] = ("float32", "float64")
    reference: str | Callable = ""
    check_params: dict = field(default_factory=dict, hash=False)
    source: Callable[[Case], str] | None = None
    sized_code: bool = False

    def __post_init__(self):
        if not self.reference:
            object.__setattr__(self, "reference", self.name)

    def groups(self, group_set: str | None = None) -> tuple[tuple[int, int], ...]:
        if group_set is not None:
            if group_set not in GROUP_SETS:
                raise KernelcastError(
                    f"unknown group-size set {group_set!r}; known: {', '.join(GROUP_SETS)}")
            wanted_dims = 1 if self.group_set and self.group_set.startswith("1-D") else 2
            if not group_set.startswith(f"{wanted_dims}-D"):
                return self.groups()
            return GROUP_SETS[group_set]
        return self.group_sizes or GROUP_SETS[self.group_set]

    def cases(self, suite: str, p: int, dtypes=None, group_set=None) -> Iterator[Case]:
        for dtype in self.dtypes or (None,):
            if dtype is not None and dtypes is not None and dtype not in dtypes:
                continue
            for variant in self.variants:
                for group in self.groups(group_set):
                    for t, params in enumerate(self.sizes(variant, p, group)):
                        yield Case(suite, self, variant, dtype, group, p, t, params)


@dataclass(frozen=True)
class Suite:
    """A named collection of kernel classes; *measure_extra(backend, store, progress=...)*,
    where given, measures what the suite needs that is not a kernel (the Pöppl–Herz
    suites' host↔device copies) after its cases, and returns the rows it added."""

    name: str
    classes: tuple[KernelClass, ...]
    measure_extra: Callable | None = field(default=None, compare=False, repr=False)

    def kernel_class(self, name: str) -> KernelClass:
        for kclass in self.classes:
            if kclass.name == name:
                return kclass
        raise KernelcastError(f"suite {self.name!r} has no class {name!r}; "
                              f"classes: {', '.join(c.name for c in self.classes)}")

    def scaled(self, name: str, shifts: dict[str, int]) -> Suite:
        """The same classes with every allowed p lowered by *shifts[class]* and only the
        middle group size of each class: the paper's suites at sizes a CPU runs quickly."""
        classes = []
        for kclass in self.classes:
            groups = kclass.groups()
            classes.append(replace(
                kclass, p_choices=tuple(p - shifts[kclass.name] for p in kclass.p_choices),
                group_set=None, group_sizes=(groups[len(groups) // 2],)))
        return Suite(name, tuple(classes))

    def cases(self, p: dict[str, int] | None = None, dtypes: Iterable[str] | None = None,
              group_set: str | None = None) -> list[Case]:
        """Every case; *p* maps class names to base exponents (default: each class's
        smallest allowed p)."""
        p = dict(p or {})
        for name, value in p.items():
            kclass = self.kernel_class(name)
            if value not in kclass.p_choices:
                raise KernelcastError(f"p={value} is not allowed for {name}; "
                                      f"the paper allows {list(kclass.p_choices)}")
        if dtypes is not None:
            dtypes = list(dtypes)
            unknown = set(dtypes) - set(DTYPES)
            if unknown:
                raise KernelcastError(f"unknown dtypes {sorted(unknown)}; known: {list(DTYPES)}")
        return [case for kclass in self.classes
                for case in kclass.cases(self.name, p.get(kclass.name, kclass.p_choices[0]),
                                         dtypes, group_set)]


def choose_p(kclass: KernelClass, smallest_time: Callable[[int], float | None],
             launch_overhead: float) -> int:
    """§4.2: the smallest allowed p whose smallest size case runs at least as long as the
    launch overhead of the empty kernel.

    *smallest_time(p)* returns the measured run time in seconds of the class's smallest
    case at p, or None where that p cannot run (out of memory). When no p reaches the
    overhead, the largest p that runs is chosen.
    """
    runnable = None
    for p in sorted(kclass.p_choices):
        seconds = smallest_time(p)
        if seconds is None:
            break
        runnable = p
        if seconds >= launch_overhead:
            return p
    if runnable is None:
        raise KernelcastError(f"no allowed p of {kclass.name} runs on this device")
    return runnable
