"""How fast kernelcast ranks tuning variants from a cold cache, in one process and on a
local Dask cluster (issue 23's target: 1,000 variants in at most 60 s on a 2-core machine).

Ranks every variant of every tuning family (kernelcast.tune.families) at its GPU sizes
(``params``) with the H100's extended profile, as ``kernelcast tune`` does: make the
variant, check it against an H100's limits (1,024 work-items per group, 48 KiB of local
memory), count its properties through kernelcast.properties.cached_properties and predict.
Both runs start cold: each counts into a new, empty cache folder of its own, with Loopy's
disk cache off (LOOPY_NO_CACHE, set before Loopy is imported; the workers inherit it).
They take turns family by family, so that both see the same load from whatever else runs
on the machine (the 1-minute load average is recorded: other processes slow both). The
run with workers counts the start of its cluster, the workers' imports included, in its
time, and also reports it apart.

Prints, per run, the variants ranked, seconds in all, ms per variant and variants per
60 s (and per family), whether the rankings agree and the speed-up, and writes
data/ranking-speed.json with the date, the machine (CPU model, cores) and the numbers.
Run:

    .venv/bin/python benchmarks/ranking_speed.py [--workers 2] [--no-serial]
        [--families NAME ...] [--out FILE]
"""

import os

os.environ["LOOPY_NO_CACHE"] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "data" / "profiles" / "nvidia-h100-80gb-hbm3-cuda-extended.json"
MAX_GROUP_SIZE, LOCAL_MEM_BYTES = 1024, 48 * 1024  # an H100's, as CUDA reports them
TARGET_VARIANTS, TARGET_S = 1000, 60.0


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _warm():
    """What a worker imports to rank (done once per worker; counted in the start)."""
    import kernelcast.properties  # noqa: F401
    import kernelcast.tune.tuner  # noqa: F401


def rank_both(families, model, workers: int, serial: bool) -> list[dict]:
    """Rank every family's variants in this process (if *serial*) and on a local cluster
    of *workers* processes, family by family in turns (so that both see the same load
    from other processes on the machine), each counting into a new cache folder of its
    own; a summary of each run, with its rankings under "_rankings"."""
    from kernelcast.properties import cached_properties
    from kernelcast.tune.distributed import cluster
    from kernelcast.tune.tuner import rank

    modes = ([1] if serial else []) + [workers]
    folders = {m: tempfile.mkdtemp(prefix=f"kernelcast-ranking-speed-{m}-") for m in modes}
    runs = {m: {"workers": m, "seconds": 0.0, "cluster_start_s": 0.0, "families": {},
                "_rankings": {}, "_load": []} for m in modes}
    try:
        start = time.perf_counter()
        with cluster(workers) as client:
            client.run(_warm)
            runs[workers]["cluster_start_s"] = time.perf_counter() - start
            runs[workers]["seconds"] = runs[workers]["cluster_start_s"]
            print(f"  cluster of {workers} workers started (imports included) in "
                  f"{runs[workers]['cluster_start_s']:.1f} s", flush=True)
            for i, fam in enumerate(families):
                for m in (modes if i % 2 == 0 else modes[::-1]):
                    count = functools.partial(cached_properties, cache_dir=folders[m])
                    load = os.getloadavg()[0]
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ranked, skipped = rank(fam.build(), fam.params, fam.space, model,
                                               max_group_size=MAX_GROUP_SIZE,
                                               local_mem_bytes=LOCAL_MEM_BYTES,
                                               properties=count,
                                               client=client if m > 1 else None)
                    seconds = time.perf_counter() - t
                    run = runs[m]
                    run["seconds"] += seconds
                    run["_rankings"][fam.name] = (ranked, skipped)
                    run["_load"] += [load, os.getloadavg()[0]]
                    run["families"][fam.name] = {
                        "variants": len(ranked) + len(skipped), "ranked": len(ranked),
                        "skipped": len(skipped), "seconds": round(seconds, 2)}
                    what = "one process" if m == 1 else f"{m} workers"
                    print(f"  {fam.name} ({what}): {len(ranked) + len(skipped)} variants "
                          f"({len(ranked)} ranked) in {seconds:.1f} s", flush=True)
    finally:
        entries = {m: len(list(Path(f).glob("*.json"))) for m, f in folders.items()}
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    out = []
    for m in modes:
        run = runs[m]
        variants = sum(f["variants"] for f in run["families"].values())
        out.append({
            "workers": m, "variants": variants,
            "ranked": sum(f["ranked"] for f in run["families"].values()),
            "skipped": sum(f["skipped"] for f in run["families"].values()),
            "cache_entries_written": entries[m], "seconds": round(run["seconds"], 2),
            "cluster_start_s": round(run["cluster_start_s"], 2),
            "ms_per_variant": round(1000 * run["seconds"] / variants, 1),
            "variants_per_60s": round(60 * variants / run["seconds"]),
            "load_average_1min": {"mean": round(sum(run["_load"]) / len(run["_load"]), 2),
                                  "max": round(max(run["_load"]), 2)},
            "families": run["families"], "_rankings": run["_rankings"]})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes of the local cluster (default 2)")
    parser.add_argument("--no-serial", action="store_true",
                        help="skip the run in one process")
    parser.add_argument("--families", nargs="+", help="only these families")
    parser.add_argument("--out", default=str(ROOT / "data" / "ranking-speed.json"))
    args = parser.parse_args()
    if args.workers < 2:
        parser.error("--workers: at least 2 (the run in one process is the other)")

    from kernelcast.profile import load_profile
    from kernelcast.tune.families import FAMILIES
    from kernelcast.version import __version__

    families = [FAMILIES[n] for n in (args.families or FAMILIES)]
    model = load_profile(PROFILE)
    print(f"ranking {', '.join(f.name for f in families)} from cold caches, in turns: "
          + ("one process, " if not args.no_serial else "")
          + f"{args.workers} worker processes", flush=True)
    runs = rank_both(families, model, args.workers, not args.no_serial)
    for run in runs:
        what = "one process" if run["workers"] == 1 else f"{run['workers']} workers"
        verdict = "meets" if (run["variants"] >= TARGET_VARIANTS
                              and run["variants_per_60s"] >= TARGET_VARIANTS) else "misses"
        print(f"{what}: {run['variants']} variants ({run['ranked']} ranked, "
              f"{run['skipped']} skipped) in {run['seconds']:.1f} s"
              + (f" (cluster start {run['cluster_start_s']:.1f} s)"
                 if run["workers"] > 1 else "")
              + f"; {run['ms_per_variant']:.0f} ms per variant; "
              f"{run['variants_per_60s']} variants per 60 s ({verdict} the target of "
              f"{TARGET_VARIANTS} in {TARGET_S:.0f} s); load average "
              f"{run['load_average_1min']['mean']:.1f}", flush=True)
    identical = None
    if len(runs) == 2:
        identical = runs[0]["_rankings"] == runs[1]["_rankings"]
        print(f"the two rankings are {'identical' if identical else 'DIFFERENT'}; "
              f"speed-up {runs[0]['seconds'] / runs[1]['seconds']:.2f}x")
    doc = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                       "python": platform.python_version()},
           "kernelcast": __version__, "profile": str(PROFILE.relative_to(ROOT)),
           "limits": {"max_group_size": MAX_GROUP_SIZE, "local_mem_bytes": LOCAL_MEM_BYTES},
           "target": {"variants": TARGET_VARIANTS, "seconds": TARGET_S},
           "cold": "a new properties cache folder per run; LOOPY_NO_CACHE=1",
           "identical_rankings": identical,
           "speedup": (round(runs[0]["seconds"] / runs[1]["seconds"], 2)
                       if len(runs) == 2 else None),
           "runs": [{k: v for k, v in r.items() if not k.startswith("_")} for r in runs]}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":  # worker processes import this file again: start nothing there
    main()
