"""The fine-grained model's case studies as profiled on a GPU (shared/seeds 003, §VI):
what benchmarks/criteria_cases.py measure wrote (cases.json and ncu.tar.xz) read back as
the applications the criteria model judges, one per version of kernelcast.suites.
criteria_cases.

Public names: profiled.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from kernelcast.frontends.profiler import read_ncu_csv
from kernelcast.models.criteria.criteria import Application
from kernelcast.suites.criteria_cases import cases, signatures


def profiled(folder) -> list[tuple[dict, Application]]:
    """The profiled case versions of a GPU (*folder*: its cases.json and ncu.tar.xz) as
    (record, Application) pairs, in the order of the suite's ``cases()``: each version's
    own launches (the cupy copies that set up its buffers left out) with their measured
    times and the application's measured span."""
    folder = Path(folder)
    doc = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    sources = {(c.application, c.version): c.source for c in cases()}
    result = []
    with tarfile.open(folder / "ncu.tar.xz") as tar:
        for record in doc["records"]:
            key = (record["application"], record["version"])
            names = set(signatures(sources[key]))
            member = tar.extractfile(f"{key[0]}-{key[1]}.csv")
            launches = tuple(x for x in read_ncu_csv(member.read().decode("utf-8"))
                             if x.kernel in names)
            result.append((record, Application(f"{key[0]} {key[1]}", launches,
                                               tuple(record["kernel_s_of_fastest"]),
                                               record["min_span_s"])))
    return result
