"""Several GPUs of one host, from data/h100x2/ and data/h100x4/multi-device.json
(benchmarks/multi_device.py): every variant of a tuning family measured on 1 to N GPUs,
calibrations of each GPU in its own right, a worker killed mid-run, and two identical
GPUs' profiles compared (data/h100x2/profiles-compared.json).

Public names: section_several_gpus.
"""

from __future__ import annotations

import json

from kernelcast.evaluation.results.common import Data, pct, table

def section_several_gpus(data: Data) -> list[str]:
    out = ["## Several GPUs of one host", ""]
    machines = [(name, data / name / "multi-device.json") for name in ("h100x2", "h100x4")]
    machines = [(name, path) for name, path in machines if path.exists()]
    if not machines:
        return out + ["*Not generated: no data/h100x2/ or data/h100x4/multi-device.json.*"]
    docs = {name: json.loads(path.read_text(encoding="utf-8")) for name, path in machines}
    for name, path in machines:
        doc = docs[name]
        starts = ", ".join(f"{k} from {v['started'][:10]} {v['started'][11:16]} UTC"
                           for k, v in doc["runs"].items())
        out += [f"`benchmarks/multi_device.py` on {doc['machine']} (runs {starts}; "
                f"`{data.rel(path)}`, {data.file_commit(path)})."]
    out += ["", "Every run is one worker process per GPU (`kernelcast.tune.distributed`, "
            "`--devices N`), each pinned to its GPU and holding its lock; 1 GPU means a "
            "cluster of one such worker. Caches: whether the GPU code of the run's cases "
            "was already compiled on the machine (cupy's and Loopy's caches) — compare "
            "runs with the same.", ""]
    recs = [r for doc in docs.values() for r in doc["records"]]

    def base(r):  # the 1-GPU run with the same work and caches, else None
        return next((b for b in recs if len(b["devices"]) == 1 and b["what"] == r["what"]
                     and b.get("family") == r.get("family")
                     and b.get("model") == r.get("model") and b["run"] == r["run"]
                     and b["caches"] == r["caches"]), None)

    rows = []
    for r in recs:
        if r["what"] != "family" or r.get("killed"):
            continue
        b, n = base(r), len(r["devices"])
        speed = f"{b['measure_s'] / r['measure_s']:.2f}×" if b else ""
        rate = r.get("rows_per_s_after_first")
        steady = (f"{rate / b['rows_per_s_after_first']:.2f}×" if b and rate
                  and b.get("rows_per_s_after_first") else "")
        rows.append([r["run"], f"{r['family']} ({r['cases']} variants)", str(n),
                     r["caches"], f"{r['measure_s']:.1f} s",
                     "" if r.get("first_row_s") is None else f"{r['first_row_s']:.1f} s",
                     "" if rate is None else f"{rate:.1f}", speed, steady,
                     ", ".join(str(v) for _, v in sorted(r["rows_per_device"].items()))])
    out += ["**Every valid variant of one tuning family** (`kernelcast.tune.families`, "
            "CUDA), measured into a new store: wall time from the cluster being up to the "
            "last row stored; the first row's arrival (each worker imports Loopy and starts "
            "its CUDA process: a fixed cost more GPUs do not shorten); rows a second after "
            "the first; speed-ups over 1 GPU in the same run with the same caches (none "
            "where the 1-GPU run was the cold one).", "",
            table(["run", "family", "GPUs", "caches", "wall", "first row", "rows/s after",
                   "speed-up (wall)", "speed-up (rows/s)", "rows per GPU"], rows,
                  ["l", "l", "r", "l", "r", "r", "r", "r", "r", "r"]), ""]
    rows = []
    for r in recs:
        if r["what"] != "calibrate":
            continue
        b, n = base(r), len(r["devices"])
        speed = f"{n * b['seconds'] / r['seconds']:.2f}×" if b else ""
        rows.append([r["run"], r["model"], str(n), r["caches"], f"{r['seconds']:.1f} s",
                     speed, ", ".join(f"{d['rows']} ({pct(d['training_geomean_rel_error'])})"
                                      for d in r["per_device"])])
    out += ["**Calibrations**, each GPU in its own right (`kernelcast calibrate --devices "
            "N`: every GPU measures its model's suites, §4.2's sizes chosen on it, into a "
            "store of its own, and gets a profile of its own). Wall time includes the "
            "cluster's start and the fits; speed-up: N calibrations' worth of work over "
            "the 1-GPU time with the same caches (N × T1 / TN).", "",
            table(["run", "model", "GPUs", "caches", "wall", "speed-up",
                   "rows (training error) per GPU"], rows,
                  ["l", "l", "r", "l", "r", "r", "l"]), ""]
    killed = [r for r in recs if r.get("killed")]
    for r in killed:
        k = r["killed"]
        out += [f"**A worker killed mid-run** (run {r['run']}): measuring {r['family']}'s "
                f"{r['cases']} variants on {len(r['devices'])} GPUs, one worker was sent "
                f"SIGKILL once {k['after_rows']} rows were stored. Its nanny restarted it "
                f"({'yes' if k['restarted'] else 'NO'}: {k['workers_after']} workers after), "
                "Dask ran its unfinished task again, and the run finished by itself in "
                f"{r['measure_s']:.1f} s: {r['measured']} rows measured, "
                f"{r['stored_twice']} stored twice, {r['missing']} missing "
                f"(`{data.rel(data / 'h100x2' / 'stencil2d-killed-worker-cuda.sqlite.xz')}`).", ""]
    cmp_path = data / "h100x2" / "profiles-compared.json"
    if cmp_path.exists():
        c = json.loads(cmp_path.read_text(encoding="utf-8"))
        first, second = c["profiles"][0], c["profiles"][1]
        diffs = [v for v in second["weight_rel_diff"].values() if v is not None]
        diffs.sort()
        median = diffs[len(diffs) // 2] if diffs else float("nan")
        big = sum(v > 0.10 for v in diffs)
        out += [f"**Two identical GPUs, two profiles** (the {c['model']} model, run C's "
                "first 2-GPU calibration; `benchmarks/multi_device.py compare`, stores "
                f"`{data.rel(data / 'h100x2' / 'calibration')}/*.sqlite.xz`, `xz -dk` first): "
                f"fitted from {first['fit_cases']} and {second['fit_cases']} cases; of the "
                f"{len(diffs)} weights, the median differs by {pct(median)} between the GPUs "
                f"and {big} by more than 10% (weights of rarely used features, which the "
                "fit determines poorly, differ most). On the "
                f"{c['cases']} test-suite cases measured on {first['instance']}, the two "
                "profiles' predictions differ by a median of "
                f"{pct(second['prediction_rel_diff']['median'], 2)} (at most "
                f"{pct(second['prediction_rel_diff']['max'])}); the GPUs' own measured "
                "times of those cases differ by a median of "
                f"{pct(second['measured_rel_diff']['median'], 2)} (at most "
                f"{pct(second['measured_rel_diff']['max'], 2)}). Each profile's "
                "geometric-mean error on its own GPU's test cases: "
                f"{first['instance']} {pct(first['test_geomean_rel_error'])}, "
                f"{second['instance']} {pct(second['test_geomean_rel_error'])}.", ""]
    return out
