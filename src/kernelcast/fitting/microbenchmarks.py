"""A GPU's microbenchmark document as what the fine-grained (criteria) model is fitted
from: the JSON that kernelcast.suites.criteria_microbenchmarks.measure_microbenchmarks
writes (``device``, ``sms``, ``clock_khz``, ``nvidia_smi``, ``date`` and one record per
microbenchmark: its launch, times and cycles, and its PTX and SASS checks), read and
checked once, as ``load_dataset`` reads a store for the other models.

Public names: Microbenchmarks, load_microbenchmarks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kernelcast.errors import KernelcastError
from kernelcast.frontends.files import check_regular_file
from kernelcast.suites.criteria_microbenchmarks import SUITE


@dataclass(frozen=True)
class Microbenchmarks:
    """The microbenchmarks of one GPU: *document* (the measured JSON, as read) and
    *store* (the path it was read from; "" for one given in memory). A document that is
    not an object with a list of ``records`` and the ``device``'s name is a one-line
    KernelcastError."""

    document: dict
    store: str = ""

    def __post_init__(self):
        doc = self.document
        where = f"{self.store}: " if self.store else ""
        if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
            raise KernelcastError(f"{where}not a microbenchmark document: the criteria "
                                  "model is fitted from the microbenchmarks that "
                                  "kernelcast.suites.criteria_microbenchmarks measures "
                                  "(an object with a list of records)")
        if not all(isinstance(r, dict) for r in doc["records"]):
            raise KernelcastError(f"{where}the microbenchmark document's records must be "
                                  "objects")
        if not isinstance(doc.get("device"), str) or not doc["device"].strip():
            raise KernelcastError(f"{where}the microbenchmark document names no device")

    @property
    def records(self) -> list[dict]:
        """One record per microbenchmark, in the order measured."""
        return self.document["records"]

    @property
    def device(self) -> str:
        return self.document["device"]

    def __len__(self) -> int:
        return len(self.records)

    def provenance(self) -> dict:
        """Where a model fitted on these microbenchmarks came from, for its profile."""
        driver = str(self.document.get("nvidia_smi", "")).split(",")[0].strip()
        return {"device": self.device, "driver": driver, "backend": "cuda",
                "compute_units": self.document.get("sms"), "suite": SUITE,
                "store": self.store, "suites": [SUITE], "cases": len(self)}


def load_microbenchmarks(path) -> Microbenchmarks:
    """The microbenchmark document at *path*; a one-line KernelcastError where it is
    missing, not a regular file, unreadable, not JSON or not such a document."""
    store = str(path)
    # a FIFO would block the read, a directory is no document
    if check_regular_file(store, "microbenchmark document") is None:
        raise KernelcastError(f"{store}: no such microbenchmark document")
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise KernelcastError(f"{store}: not a microbenchmark document: {err}") from None
    return Microbenchmarks(document, store)
