"""Measured variants of kernel families as a dataset (kernelcast.fitting.dataset.Dataset).

A tuning store (benchmarks/tuning_gpu.py) holds one row per variant, named
``FAMILY/KEY`` (kernelcast.tune.space.variant_key). ``load_variant_dataset`` turns the
timed rows of the given families back into cases whose kernels are the variants, so that
a model is fitted to (or evaluated on) them like any suite: ``info.kernel_class`` is the
family, which leave-one-class-out cross-validation holds out whole.

Public names: VariantCase, DiskPropertyCache, own_variant_name, load_variant_dataset,
load_random_dataset.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelcast.errors import KernelcastError
from kernelcast.fitting.dataset import (
    TIMED,
    Dataset,
    PropertyCache,
    of_a_registered_suite,
    timing_noise,
)
from kernelcast.tune.space import apply, variant_key


class DiskPropertyCache(PropertyCache):
    """PropertyCache through the on-disk cache (kernelcast.properties.cached_properties):
    a corpus has thousands of variants. A variant of one of kernelcast's own families is
    kept under its family's name and its variant's key, so that a hit builds no kernel;
    a variant of another family under its kernel's hash."""

    def _extract(self, case):
        from kernelcast.properties.cache import cached_properties, named_properties

        if of_a_registered_suite(case):
            return super()._extract(case)
        name = own_variant_name(case)
        if name is not None:
            return named_properties(name, case.kernel)
        return cached_properties(case.kernel())


def own_variant_name(case) -> list[str] | None:
    """The name a variant of one of kernelcast's own families (the tuning families, the
    corpus, the random families) is cached under, or None: another family's kernel may
    change while its name stays."""
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.families import FAMILIES
    from kernelcast.tune.random_families import DeferredFamily

    fam = getattr(case, "family", None)
    name = getattr(fam, "name", None)
    own = (isinstance(fam, DeferredFamily) or CORPUS.get(name) is fam
           or FAMILIES.get(name) is fam)
    return ["tuning variant", name, variant_key(case.variant)] if own else None


@dataclass(frozen=True)
class VariantCase:
    """One variant of a family at the family's sizes; ``kernel()`` makes it."""

    family: object = field(repr=False)
    variant: dict = field(hash=False)
    kernel_name: str = ""
    params: dict = field(default_factory=dict, hash=False)

    def kernel(self):
        return apply(self.family.build(), self.variant, self.family.space)


def load_variant_dataset(store, families, *, suite: str = "tuning-corpus",
                         cache: PropertyCache | None = None) -> Dataset:
    """The timed rows of *families* (Family objects) in *store* (an open Store), in the
    families' order and each family's variant order; rows of other families are left
    out. *suite* names what a model fitted on it was fitted from."""
    by_name = {r["case_name"]: r for r in store.rows()
               if not r.get("damage") and r["status"] in TIMED}
    cases, rows = [], []
    for fam in families:
        for variant in fam.space.variants():
            name = f"{fam.name}/{variant_key(variant)}"
            row = by_name.get(name)
            if row is None:
                continue
            cases.append(VariantCase(fam, variant, name, dict(fam.params)))
            rows.append(row)
    if not rows:
        raise KernelcastError(f"the store {store.path} has no timed variants of "
                              f"{', '.join(f.name for f in families)}")
    info = pd.DataFrame([{"case_name": r["case_name"], "suite": suite,
                          "kernel_class": c.family.name, "variant": "",
                          "dtype": "float32", "params": r["params"], "status": r["status"]}
                         for c, r in zip(cases, rows, strict=True)])
    noise = timing_noise([{**r, "suite": suite} for r in rows], (suite,))
    return Dataset(cases, np.array([r["min_s"] for r in rows]), info,
                   {**store.identity, "compute_units": store.compute_units}, suite, noise,
                   str(store.path), cache or DiskPropertyCache())


def load_random_dataset(store, *, suite: str = "random-loops") -> Dataset:
    """The timed rows of random loop families (kernelcast.tune.random_families) in
    *store*, in the store's order; each case's family is made only if its kernel is
    asked for."""
    from kernelcast.tune.random_families import DeferredFamily, is_random_family
    from kernelcast.tune.space import parse_variant_key

    rows = [r for r in store.rows() if not r.get("damage") and r["status"] in TIMED
            and is_random_family(r["case_name"].split("/")[0])]
    if not rows:
        raise KernelcastError(f"the store {store.path} has no timed random-family variants")
    families: dict[str, DeferredFamily] = {}
    cases = []
    for r in rows:
        fam_name, _, key = r["case_name"].partition("/")
        fam = families.setdefault(fam_name, DeferredFamily(int(fam_name.split("-")[1])))
        cases.append(VariantCase(fam, parse_variant_key(key), r["case_name"],
                                 dict(r["params"])))
    info = pd.DataFrame([{"case_name": r["case_name"], "suite": suite,
                          "kernel_class": r["case_name"].split("/")[0], "variant": "",
                          "dtype": "", "params": r["params"], "status": r["status"]}
                         for r in rows])
    noise = timing_noise([{**r, "suite": suite} for r in rows], (suite,))
    return Dataset(cases, np.array([r["min_s"] for r in rows]), info,
                   {**store.identity, "compute_units": store.compute_units}, suite, noise,
                   str(store.path), DiskPropertyCache())
