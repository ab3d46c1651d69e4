"""What the fine-grained model tells a user (shared/seeds 003, §VI's reading of Figures
5–7): a hint in plain words for every criterion whose potential speedup is worth having,
the Loopy transformation that addresses it, a table of the criteria, and the figure of
one or more versions of an application (bars: criteria; dots: potential speedups; beside
them, the overall potential speedup of each version), drawn by kernelcast.report.

Public names: Hint, hints, rows, as_json, LABELS, SHORT, LOOPY, WORTH.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelcast.models.criteria.criteria import CRITERIA, Assessment

# a criterion whose potential speedup is below this is not worth a hint
WORTH = 1.1

LABELS = {"HOSTSYNC": "host synchronization", "DEVICESYNC": "device synchronization",
          "DIVERGENCE": "divergence", "LOADBALANCE_WARP": "warp load balancing",
          "LOADBALANCE_SM": "SM load balancing", "L1_GRANULARITY": "L1 granularity",
          "L2_GRANULARITY": "L2 granularity", "SHMEM_EFFICIENCY": "shared memory efficiency",
          "THROUGHPUT_OCCUPANCY": "throughput/occupancy"}

SHORT = {"HOSTSYNC": "host sync", "DEVICESYNC": "device sync", "DIVERGENCE": "divergence",
         "LOADBALANCE_WARP": "warp balance", "LOADBALANCE_SM": "SM balance",
         "L1_GRANULARITY": "L1 gran.", "L2_GRANULARITY": "L2 gran.",
         "SHMEM_EFFICIENCY": "shared eff.", "THROUGHPUT_OCCUPANCY": "thr./occ."}

# the Loopy transformation that addresses each criterion (a Loopy kernel's hint names it)
LOOPY = {
    "HOSTSYNC": "lp.fuse_kernels (one kernel instead of several launches)",
    "DEVICESYNC": "lp.split_iname with a longer inner loop (more work between barriers), "
                  "or lp.add_prefetch of fewer, larger tiles",
    "DIVERGENCE": "lp.split_iname(..., slabs=(0, 1)) (peel the guarded remainder) or "
                  "lp.assume (sizes divisible by the work-group)",
    "LOADBALANCE_WARP": "lp.split_iname with another inner length (work-group size)",
    "LOADBALANCE_SM": "lp.split_iname with a shorter outer tag g.0 (more, smaller "
                      "work-groups)",
    "L1_GRANULARITY": "lp.tag_inames with l.0 on the iname of the contiguous axis, or "
                      "lp.add_prefetch (stage the tile in local memory)",
    "L2_GRANULARITY": "lp.tag_inames with l.0 on the iname of the contiguous axis, or "
                      "lp.add_prefetch (stage the tile in local memory)",
    "SHMEM_EFFICIENCY": "lp.add_padding on the local array (one element more per row)",
    "THROUGHPUT_OCCUPANCY": "lp.split_iname with a smaller work-group, or fewer "
                            "temporaries per work-item",
}


@dataclass(frozen=True)
class Hint:
    criterion: str
    value: float | None
    speedup: float
    text: str
    loopy: str


def _worst(assessment: Assessment, criterion: str):
    """The launch that loses most time to *criterion*."""
    return max(assessment.kernels,
               key=lambda k: k.seconds * (1 - 1 / k.speedups[criterion]))


def _text(assessment: Assessment, criterion: str) -> str:
    k = _worst(assessment, criterion)
    f = k.facts
    if criterion == "HOSTSYNC":
        share = 1 - (assessment.values["HOSTSYNC"] or 1)
        return (f"{len(assessment.kernels)} launches leave the GPU idle {share:.0%} of the "
                "time between them: merge kernels or synchronize on the device "
                "(a cooperative grid sync)")
    if criterion == "DEVICESYNC":
        return (f"{f['stall_sync']:.0%} of the stalls in {k.kernel} wait at barriers: "
                "fewer barriers (warp-synchronous steps, more work between them)")
    if criterion == "DIVERGENCE":
        return (f"warps of {k.kernel} run with {f['warp_efficiency']:.0%} of their threads "
                "on average: branches split warps; make neighbouring threads take the same "
                "path (contiguous active threads, more elements per thread)")
    if criterion == "LOADBALANCE_WARP":
        return (f"{k.kernel} keeps fewer warps resident than its configuration allows "
                f"({f['blocks_per_sm']:.0f} blocks per SM, limited by "
                f"{f['occupancy_limit'].replace('_', ' ')}): blocks finish unevenly or the "
                "grid is short; rearrange threads so that blocks do equal work")
    if criterion == "LOADBALANCE_SM":
        return (f"the SMs are busy unevenly in {k.kernel}: too few blocks, or blocks of "
                "unequal work; more, smaller blocks")
    if criterion in ("L1_GRANULARITY", "L2_GRANULARITY"):
        level = criterion[:2]
        return (f"{k.kernel} uses {k.values[criterion]:.0%} of the bytes it moves through "
                f"{level}: its accesses are not coalesced; let consecutive threads access "
                "consecutive addresses (transpose through shared memory, reshape blocks)")
    if criterion == "SHMEM_EFFICIENCY":
        ways = f.get("shared_ways", 1.0)
        return (f"{ways:.0f}-way bank conflicts in the shared memory of {k.kernel}: pad "
                "the shared (local) array by one element per row")
    return (f"{k.kernel} reaches {k.memthr:.0%} of the DRAM throughput its occupancy "
            f"allows, at a theoretical occupancy of {f['occupancy']:.0%}: raise the "
            "occupancy (smaller blocks, fewer registers or less shared memory per block)")


def hints(assessment: Assessment, loopy: bool = False) -> list[Hint]:
    """The criteria worth improving, largest potential speedup first."""
    result = []
    for name in CRITERIA:
        speedup = assessment.speedups[name]
        if speedup < WORTH:
            continue
        result.append(Hint(name, assessment.values[name], speedup,
                           _text(assessment, name), LOOPY[name] if loopy else ""))
    return sorted(result, key=lambda h: -h.speedup)


def _value(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def rows(assessment: Assessment) -> list[list[str]]:
    """One row per criterion: name, value, potential speedup."""
    return [[LABELS[name], _value(assessment.values[name]),
             f"{assessment.speedups[name]:.2f}×"] for name in CRITERIA]


def as_json(assessment: Assessment, loopy: bool = False) -> dict:
    """The assessment, its launches and hints, as JSON-ready data."""
    return {
        "application": assessment.application, "span_s": assessment.span,
        "device": assessment.device, "device_mismatch": assessment.mismatch or None,
        "potential_speedup": assessment.potential,
        "criteria": {n: {"value": assessment.values[n], "speedup": assessment.speedups[n]}
                     for n in CRITERIA},
        "launches": [{"kernel": k.kernel, "seconds": k.seconds, "bound": k.bound,
                      "memthr": k.memthr, "ariththr": k.ariththr,
                      "potential_speedup": k.potential, "shares": k.shares,
                      "criteria": {n: {"value": k.values[n], "speedup": k.speedups[n]}
                                   for n in CRITERIA}}
                     for k in assessment.kernels],
        "hints": [{"criterion": h.criterion, "speedup": h.speedup, "hint": h.text,
                   **({"loopy": h.loopy} if h.loopy else {})}
                  for h in hints(assessment, loopy)]}
