"""Measured cases as a dataset: the rows of a measurement store decoded back into suite
cases, with their measured minimum times and the store's device.

A model is fitted to a Dataset and evaluated on one; it computes its own inputs from each
case (``properties(i)`` and ``params(i)``), so the same dataset serves every model.

Public names: TIMED, Dataset, PropertyCache, case_identity, of_a_registered_suite,
case_from_row, load_dataset, timing_noise.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kernelcast.errors import DamagedRowsWarning, KernelcastError
from kernelcast.properties import Properties, extract_properties
from kernelcast.suites.suite import Case

TIMED = ("ok", "unstable")


class PropertyCache:
    """Properties of suite kernels, extracted once per kernel, and what models compute
    from them (``remember``), computed once per dataset and its subsets: a
    cross-validation fits each case once per fold. The kernels of kernelcast's own
    suites go through the on-disk properties cache under their names, so that a hit
    builds no kernel; other kernels are extracted here."""

    def __init__(self):
        self._props: dict[tuple, Properties] = {}
        self._remembered: dict = {}

    def remember(self, key, compute):
        """``compute()``, made once per hashable *key*."""
        if key not in self._remembered:
            self._remembered[key] = compute()
        return self._remembered[key]

    def properties(self, case) -> Properties:
        key = case_identity(case)
        if key not in self._props:
            self._props[key] = self._extract(case)
        return self._props[key]

    def _extract(self, case) -> Properties:
        if of_a_registered_suite(case):
            from kernelcast.properties.cache import named_properties

            return named_properties(["suite case", *case_identity(case)], case.kernel)
        return extract_properties(case.kernel())


def case_identity(case) -> tuple[str, str, str]:
    """What tells the kernel of *case* from the others a dataset may hold: its suite, its
    kernel name, and its sizes where they are part of its code (``KernelClass.sized_code``;
    two random suites' kernels share names)."""
    sized = getattr(getattr(case, "kclass", None), "sized_code", False)
    return (getattr(case, "suite", ""), case.kernel_name,
            repr(sorted(case.params.items())) if sized else "")


def of_a_registered_suite(case) -> bool:
    """Whether *case* is of one of kernelcast's suites (``all_suites``), its class that
    suite's own: its kernel is then made by kernelcast's code from its name alone."""
    from kernelcast.suites.paper import all_suites

    suite = all_suites().get(getattr(case, "suite", None))
    kclass = getattr(case, "kclass", None)
    return suite is not None and any(k is kclass for k in suite.classes)


def case_from_row(row: dict) -> Case | None:
    """The suite case a store row measured, or None for rows of no suite."""
    from kernelcast.suites.paper import get_suite

    if not row.get("suite") or not row.get("kernel_class"):
        return None
    kclass = get_suite(row["suite"]).kernel_class(row["kernel_class"])
    return Case(row["suite"], kclass, row["variant"] or "", row["dtype"],
                tuple(row["group_size"]), row["p"], row["t"], dict(row["params"]))


def timing_noise(rows: list[dict], suites: tuple[str, ...], statuses=TIMED) -> float:
    """The median over the timed rows of *suites* of median/minimum time − 1: how far a
    repeated timing strays, the error below which a fit cannot tell misfit from noise.
    At least 0.1%."""
    spreads = [row["median_s"] / row["min_s"] - 1 for row in rows
               if row["suite"] in suites and row["status"] in statuses]
    return max(float(np.median(spreads)), 1e-3) if spreads else 1e-3


@dataclass
class Dataset:
    """Timed cases of one device: ``cases[i]`` measured ``seconds[i]``; ``info`` has a
    row per case (case_name, suite, kernel_class, variant, dtype, params, status);
    ``identity`` the store's backend, device, driver and compute units; ``suite`` the
    measurement suite a fit on it is named after; ``noise`` the timing noise of its rows;
    ``store`` the store's path."""

    cases: list[Case]
    seconds: np.ndarray
    info: pd.DataFrame
    identity: dict
    suite: str = "measurement"
    noise: float = 1e-3
    store: str = ""
    cache: PropertyCache = field(default_factory=PropertyCache, repr=False)

    def __len__(self) -> int:
        return len(self.cases)

    def properties(self, i: int) -> Properties:
        return self.cache.properties(self.cases[i])

    def params(self, i: int) -> dict:
        """The sizes case *i* is predicted at: its parameters, or none where its class
        bakes the sizes into the code (``KernelClass.sized_code``: its params only
        label the case)."""
        case = self.cases[i]
        sized = getattr(getattr(case, "kclass", None), "sized_code", False)
        return {} if sized else case.params

    def subset(self, mask) -> Dataset:
        """The cases where the boolean array *mask* is true, sharing the cache."""
        mask = np.asarray(mask, dtype=bool)
        return Dataset([c for c, keep in zip(self.cases, mask, strict=True) if keep],
                       self.seconds[mask], self.info[mask].reset_index(drop=True),
                       self.identity, self.suite, self.noise, self.store, self.cache)

    def provenance(self) -> dict:
        """Where a model fitted on this dataset came from, for its profile."""
        return {"device": self.identity["device"], "driver": self.identity["driver"],
                "backend": self.identity["backend"],
                "compute_units": self.identity.get("compute_units"),
                "instance": self.identity.get("instance", ""), "suite": self.suite,
                "suites": sorted(set(self.info.suite)) if len(self.info) else [],
                "store": self.store, "cases": len(self)}


def load_dataset(store, suites: str | tuple[str, ...], *, suite: str | None = None,
                 cache: PropertyCache | None = None, statuses=TIMED) -> Dataset:
    """The timed rows of *suites* (a name or names) in *store* (an open Store). *suite*
    names the measurement suite a fit is named after (default: the first of *suites*).
    Damaged rows are left out with a DamagedRowsWarning."""
    suites = (suites,) if isinstance(suites, str) else tuple(suites)
    rows = store.rows()
    damaged = [r for r in rows if r.get("damage")]
    if damaged:  # never fitted to: Store.damaged() says why each is
        names = ", ".join(str(r["case_name"]) for r in damaged[:3])
        warnings.warn(DamagedRowsWarning(
            f"{len(damaged)} damaged row{'s' * (len(damaged) > 1)} of {store.path} left out "
            f"({names}{', ...' * (len(damaged) > 3)})"), stacklevel=2)
    rows = [r for r in rows if not r.get("damage") and r["suite"] in suites
            and r["status"] in statuses]
    if not rows:
        raise KernelcastError(f"the store {store.path} has no timed rows of the "
                              f"{' or '.join(suites)} suite")
    info = pd.DataFrame([{"case_name": r["case_name"], "suite": r["suite"],
                          "kernel_class": r["kernel_class"], "variant": r["variant"],
                          "dtype": r["dtype"], "params": r["params"], "status": r["status"]}
                         for r in rows])
    return Dataset([case_from_row(r) for r in rows], np.array([r["min_s"] for r in rows]),
                   info, {**store.identity, "compute_units": store.compute_units,
                    "instance": store.instance},
                   suite or suites[0],
                   timing_noise(rows, suites, statuses), str(store.path),
                   cache or PropertyCache())
