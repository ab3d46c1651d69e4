"""Launches named as data: a JSON entry that names one kernel of any set kernelcast is
judged on, and its parameters, so that a list of launches (benchmarks/counters_gpu.py's
plan, data/counters-plan.json.xz) can be written once and every kernel of it rebuilt
anywhere, without a GPU.

An entry's ``kind`` says which set its kernel is of:

- ``suite``: a case of a suite of kernelcast.suites.paper (``suite``, ``class``,
  ``variant``, ``dtype``, ``group``, ``p`` and ``params``);
- ``random``: the Loopy twin of a random kernel of kernelcast.suites.random_kernels
  (``set``, ``number`` and ``n``), whose sizes are fixed in the kernel;
- ``family`` or ``corpus``: a variant (``variant``, a dict of kernelcast.tune.space) of a
  tuning family (kernelcast.tune.families) or of a corpus family (kernelcast.tune.corpus),
  named by ``family``, at ``params``.

The module sits in tune, the lowest layer that knows all four sets.

Public names: launch_kernel.
"""

from __future__ import annotations


def launch_kernel(entry: dict):
    """(Loopy kernel, parameters) of the launch *entry* names; the parameters of a random
    kernel are empty (its sizes are in its code)."""
    kind = entry["kind"]
    if kind == "suite":
        from kernelcast.suites.paper import case_of

        return case_of(entry).kernel(), dict(entry["params"])
    if kind == "random":
        from kernelcast.suites.random_kernels import random_kernel

        return random_kernel(entry["set"], entry["number"], entry["n"]).loopy_kernel(), {}
    from kernelcast.tune.corpus import corpus_family
    from kernelcast.tune.families import family
    from kernelcast.tune.space import apply

    fam = (corpus_family if kind == "corpus" else family)(entry["family"])
    return apply(fam.build(), entry["variant"], fam.space), dict(entry["params"])
