"""The learned model's random corpus: variants of random loop families
(kernelcast.tune.random_families) timed on a GPU, and their predicted hardware facts.

  measure (on the GPU machine): the first FAMILIES random families, VARIANTS random
      variants of each (``random_variants``), timed by the paper's protocol into
      OUT/corpus-loops-BACKEND.sqlite (resumable; one row per variant, named
      FAMILY/KEY). WORKERS processes generate and compile the kernels while the GPU times
      them; no kernel starts after SECONDS.
  summaries (anywhere): the launch summary of each variant (the facts model's counts,
      kernelcast.models.extended.facts.launch_summary) into
      OUT/corpus-loops-summaries-GPU.jsonl, one JSON line per variant as it finishes
      (resumable); a summary that takes over LIMIT seconds is recorded as a failure.
  pack: the summaries' lines of every source into data/GPU/learned-summaries.json.xz,
      the SummaryCache that the learned model on the facts reads, with each launch's
      geometry.

Run:  python benchmarks/corpus_gpu.py measure --out DIR [--families 1250] [--variants 8]
          [--workers 6] [--seconds 540]
      python benchmarks/corpus_gpu.py summaries --out DIR [--gpu h100] [--jobs 10]
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _family_variants(i: int, count: int) -> list[tuple[str, tuple, dict]]:
    from kernelcast.tune.random_families import random_family, random_variants
    from kernelcast.tune.space import variant_key

    fam = random_family(i)
    return [(f"{fam.name}/{variant_key(v)}", tuple(v.items()), dict(fam.params))
            for v in random_variants(fam, count)]


def variants(families: int, count: int, processes: int = 16) -> list[tuple]:
    """(case name, family name, variant items, params) of every variant, in order."""
    from kernelcast.tune.random_families import PREFIX

    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        drawn = pool.map(functools.partial(_family_variants, count=count), range(families))
    return [(name, f"{PREFIX}{i:05d}", items, params) for i, rows in enumerate(drawn)
            for name, items, params in rows]


def stored_variants(source: str, gpu: str) -> list[tuple]:
    """The timed variants of data/GPU/SOURCE-cuda.sqlite (the tuning corpus, "tuning-corpus",
    or the judged families, "tuning"), as ``variants`` gives them; none where the GPU has
    no such store."""
    from kernelcast.measure.store import Store
    from kernelcast.tune.corpus import corpus_family
    from kernelcast.tune.families import family
    from kernelcast.tune.space import variant_key

    find = corpus_family if source == "tuning-corpus" else family
    path = ROOT / "data" / gpu / f"{source}-cuda.sqlite"
    if not path.is_file():
        return []  # not measured on this GPU
    with Store(path) as store:
        names = {r["case_name"] for r in store.rows() if r["status"] in ("ok", "unstable")}
    out = []
    for fam_name in sorted({n.split("/")[0] for n in names}):
        fam = find(fam_name)
        for v in fam.space.variants():
            name = f"{fam_name}/{variant_key(v)}"
            if name in names:
                out.append((name, fam_name, tuple(v.items()), dict(fam.params)))
    return out


def variant_of(family_name: str, items: tuple):
    """The kernel of a random, corpus or judged family's variant."""
    from kernelcast.tune.corpus import CORPUS
    from kernelcast.tune.families import family
    from kernelcast.tune.random_families import is_random_family, random_family
    from kernelcast.tune.space import apply

    if is_random_family(family_name):
        fam = random_family(int(family_name.split("-")[1]))
    else:
        fam = CORPUS.get(family_name) or family(family_name)
    return apply(fam.build(), dict(items), fam.space)


def measure(args) -> int:
    from kernelcast.measure.backends import make_backend
    from kernelcast.measure.campaign import Job, run_campaign
    from kernelcast.measure.store import Store
    from kernelcast.tune.random_families import variant_kernel

    started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [Job(name, name, functools.partial(variant_kernel, int(fam.split("-")[1]), items),
                params) for name, fam, items, params in variants(args.families, args.variants)]
    print(f"{len(jobs)} variants of {args.families} families, drawn in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    backend = make_backend(args.backend)
    with backend, Store(out / f"corpus-loops-{args.backend}.sqlite",
                        backend.identity) as store:
        before = len(store.keys())
        result = run_campaign(jobs, backend, store, verify=False, progress=None,
                              workers=args.workers, deadline=started + args.seconds)
        elapsed = time.monotonic() - started
        print(json.dumps({"variants": len(jobs), "rows_before": before,
                          "measured": result.measured, "skipped": result.skipped,
                          "statuses": result.statuses, "stopped": result.stopped,
                          "seconds": round(elapsed, 1),
                          "rate_per_s": round(result.measured / elapsed, 2)}), flush=True)
    return 0


def _alarm(signum, frame):
    raise TimeoutError


@functools.cache
def _facts_summaries(gpu: str) -> dict:
    """The facts model's committed summaries (benchmarks/facts_model.py), by compiled
    code: the judged families' variants are among them."""
    from kernelcast.models.extended.facts import SummaryCache

    return SummaryCache(ROOT / "data" / gpu / "facts-summaries.json.xz").entries


def _summary(task, gpu: str, limit: float):
    from kernelcast.hardware import load_hardware
    from kernelcast.models.extended import launch_name
    from kernelcast.models.extended.facts import SummaryCache, launch_summary
    from kernelcast.models.learned.facts import launch_geometry

    name, fam, items, params = task
    hw = load_hardware(gpu)
    key = SummaryCache.key(name, params, hw.name)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        knl = variant_of(fam, items)
        known = _facts_summaries(gpu).get(SummaryCache.key(launch_name(knl), params, hw.name))
        summary = known if isinstance(known, dict) else launch_summary(knl, params, hw)
        return key, {**summary, **launch_geometry(knl, params)}
    except TimeoutError:
        return key, f"TimeoutError: over {limit:g} s"
    except Exception as err:  # noqa: BLE001 - recorded as the variant's failure
        return key, f"{type(err).__name__}: {str(err)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def summaries(args) -> int:
    from kernelcast.hardware import load_hardware
    from kernelcast.models.extended.facts import SummaryCache

    started = time.monotonic()
    stem = "corpus-loops" if args.source == "loops" else args.source
    path = Path(args.out) / f"{stem}-summaries-{args.gpu}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if path.is_file():
        with path.open() as f:
            done = {json.loads(line)[0] for line in f if line.strip()}
    hw = load_hardware(args.gpu)
    every = (variants(args.families, args.variants) if args.source == "loops"
             else stored_variants(args.source, args.gpu))
    tasks = [t for t in every if SummaryCache.key(t[0], t[3], hw.name) not in done]
    print(f"{len(tasks)} summaries to compute ({len(done)} known)", flush=True)
    count = failed = 0
    work = functools.partial(_summary, gpu=args.gpu, limit=args.limit)
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool, \
            path.open("a") as f:
        for key, summary in pool.imap_unordered(work, tasks, chunksize=4):
            f.write(json.dumps([key, summary]) + "\n")
            f.flush()
            count += 1
            failed += isinstance(summary, str)
            if count % 500 == 0:
                print(f"{count}/{len(tasks)}, {time.monotonic() - started:.0f} s",
                      flush=True)
            if time.monotonic() - started > args.seconds:
                pool.terminate()
                break
    print(json.dumps({"computed": count, "failed": failed, "of": len(tasks),
                      "seconds": round(time.monotonic() - started, 1)}), flush=True)
    return 0


def _geometry(task) -> tuple[str, dict | None]:
    from kernelcast.models.learned.facts import launch_geometry

    name, fam, items, params = task
    try:
        return name, launch_geometry(variant_of(fam, items), params)
    except Exception:  # noqa: BLE001 - a variant Loopy refuses has no summary either
        return name, None


def pack(args) -> int:
    """The summaries' JSON lines into the learned model's SummaryCache file, each with
    its launch geometry (computed here where a line lacks it)."""
    import lzma

    from kernelcast.hardware import load_hardware
    from kernelcast.models.extended.facts import SummaryCache

    hw = load_hardware(args.gpu)
    entries = {}
    for source in args.lines:
        with open(source) as f:
            for line in f:
                if line.strip():
                    key, summary = json.loads(line)
                    entries[key] = summary
    tasks = variants(args.families, args.variants) + stored_variants(
        "tuning-corpus", args.gpu) + stored_variants("tuning", args.gpu)
    missing = [t for t in tasks if isinstance(entries.get(
        SummaryCache.key(t[0], t[3], hw.name)), dict) and "workgroups" not in entries[
        SummaryCache.key(t[0], t[3], hw.name)]]
    by_name = {t[0]: t for t in tasks}
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for name, geometry in pool.imap_unordered(_geometry, missing, chunksize=16):
            key = SummaryCache.key(name, by_name[name][3], hw.name)
            if geometry is None:
                entries[key] = "no launch geometry: Loopy cannot make the variant"
            else:
                entries[key].update(geometry)
    target = ROOT / "data" / args.gpu / "learned-summaries.json.xz"
    with lzma.open(target, "wt") as f:
        json.dump(entries, f, sort_keys=True)
    print(f"{len(entries)} summaries ({len(missing)} given their geometry here), "
          f"{sum(isinstance(v, str) for v in entries.values())} failures -> {target}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("measure", "summaries"):
        p = sub.add_parser(name, help=f"{name} (see the module docstring)")
        p.add_argument("--out", required=True, help="folder for the store / the lines")
        p.add_argument("--families", type=int, default=1100, help="random families")
        p.add_argument("--variants", type=int, default=8, help="variants per family")
        p.add_argument("--seconds", type=float, default=540,
                       help="start nothing new after this many seconds")
    m = sub.choices["measure"]
    m.add_argument("--backend", default="cuda", help="cuda or opencl")
    m.add_argument("--workers", type=int, default=6,
                   help="processes generating and compiling kernels ahead of the timing")
    s = sub.choices["summaries"]
    s.add_argument("--gpu", default="h100", help="the hardware description to predict for")
    s.add_argument("--jobs", type=int, default=10, help="processes")
    s.add_argument("--limit", type=float, default=30, help="seconds per summary at most")
    s.add_argument("--source", default="loops", choices=("loops", "tuning-corpus", "tuning"),
                   help="the random families' variants, or a store's: the tuning corpus "
                        "or the judged families")
    p = sub.add_parser("pack", help="JSON lines -> data/GPU/learned-summaries.json.xz")
    p.add_argument("lines", nargs="+", help="summaries' .jsonl files")
    p.add_argument("--gpu", default="h100", help="data/GPU/ receives the file")
    p.add_argument("--families", type=int, default=1100, help="random families measured")
    p.add_argument("--variants", type=int, default=8, help="variants per family")
    p.add_argument("--jobs", type=int, default=2, help="processes")
    args = parser.parse_args()
    from kernelcast.errors import KernelcastError

    try:
        return {"measure": measure, "summaries": summaries, "pack": pack}[args.command](args)
    except (OSError, KernelcastError) as err:  # a missing file, a device or store refused
        print(f"corpus_gpu.py: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
