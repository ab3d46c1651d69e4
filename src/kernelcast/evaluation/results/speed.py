"""Speed: prediction and fit times of every model from data/speed.json
(benchmarks/model_speed.py: kernelcast.predict per call, fits to a store, a fresh
calibration), and the property extraction and evaluation speed last published by
benchmarks/properties_speed.py, which writes no data file (quoted as history).

Public names: PROPERTIES_SPEED, section_speed, section_properties_speed.
"""

from __future__ import annotations

from kernelcast.evaluation.results.common import MODEL_LABEL, Data, micro, stamp, table

def section_speed(data: Data) -> list[str]:
    path = data / "speed.json"
    out = ["## Prediction and fit speed", ""]
    doc = data.load(path)
    if doc is None:
        return out + [data.missing(path, "model_speed.py")]
    try:
        info = doc["machine"]
        out += [f"`benchmarks/model_speed.py`, {stamp(doc)}, "
                f"commit {doc['commit']}, on {info['machine']} ({info['cores']} cores, "
                f"Python {info['python']}, {info['platform']}, "
                f"{info.get('blas_threads') or 'default'} BLAS thread(s); load average "
                f"{info['load_average_at_start'][0]:.1f} at the start — a shared machine, "
                "so times vary between runs). Data: "
                f"`{data.rel(path)}` ({data.file_commit(path)}); models fitted to "
                f"`{doc['store']}`.", "",
                "Wall time of `kernelcast.predict` with the kernel's properties extracted "
                "beforehand, per call, at new sizes each call: median over "
                f"{next(iter(next(iter(doc['predict'].values())).values()))['runs']} runs "
                "(fastest – slowest run in brackets). Target (issue 2): ≤ 50 µs.", ""]
        models = list(doc["predict"])
        kernels = list(next(iter(doc["predict"].values())))
        rows = [[kernel, *(f"{micro(doc['predict'][m][kernel]['median_s'])} "
                           f"({doc['predict'][m][kernel]['min_s'] * 1e6:.0f}–"
                           f"{doc['predict'][m][kernel]['max_s'] * 1e6:.0f})"
                           for m in models)] for kernel in kernels]
        out += [table(["kernel", *(MODEL_LABEL.get(m, m) for m in models)], rows), ""]
        over = []
        for m in models:
            slow = [k for k in kernels if doc["predict"][m][k]["median_s"] > 50e-6]
            if slow:
                over.append(f"{MODEL_LABEL.get(m, m)} ({', '.join(slow)})")
        out += [("Over the 50 µs target (median): " + "; ".join(over) + "."
                 if over else "Every model meets the 50 µs target (median)."), ""]
        rows = [[MODEL_LABEL.get(m, m), f["cases"], " + ".join(f["suites"]),
                 f"{f['first_s']:.2f} s", f"{f['again_median_s']:.2f} s "
                 f"({f['again_min_s']:.2f}–{f['again_max_s']:.2f})"]
                for m, f in doc["fit"].items()]
        out += ["Fit to the store: first with the property extraction of the kernels not "
                "yet seen in the process (models in this order, sharing one cache), then "
                "the median of further fits with everything extracted.", "",
                table(["model", "cases", "suites", "first fit", "fit again"], rows,
                      ["l", "r", "l", "r", "r"]), ""]
        cal = doc.get("calibration")
        if cal and cal.get("returncode"):
            out.append(f"`kernelcast calibrate` in a fresh folder on this machine's best "
                       f"OpenCL device ({cal.get('what') or 'no description'}), "
                       f"{cal['date'][:10]}, commit {cal['commit']}: **failed** after "
                       f"{cal['seconds']:.0f} s (exit status {cal['returncode']}: "
                       + " / ".join(f"`{e}`" for e in (cal.get("error") or []))
                       + "); no calibration time was measured.")
        elif cal:
            out.append(f"`kernelcast calibrate` in a fresh folder on this machine's best "
                       f"OpenCL device ({cal.get('what') or 'no description'}): "
                       f"{cal['seconds']:.0f} s wall time, {cal.get('rows')} rows, "
                       f"{cal['date'][:10]}, commit {cal['commit']}.")
        else:
            out.append("`kernelcast calibrate` on PoCL: not measured (run the benchmark "
                       "without `--no-calibrate`).")
    except (KeyError, TypeError, ValueError, StopIteration) as err:
        out.append(f"*Not generated: `{data.rel(path)}` is not in the expected form ({err}).*")
    return out


# benchmarks/properties_speed.py as last published (the section names the day and the
# machine). The benchmark prints and writes no data file, so these are historical
# figures, not regenerated here.
PROPERTIES_SPEED = (
    ("scale (§3.1)", 6, "0.044 s", "0.007 s", "3.9 µs"),
    ("matmul tiled 16×16 (§4.1)", 10, "0.086 s", "0.049 s", "7.8 µs"),
    ("matmul tiled 16×12 (§4.1)", 10, "0.169 s", "0.124 s", "23.2 µs"),
    ("finite differences (§5)", 10, "0.084 s", "0.047 s", "19.7 µs"),
    ("N-body (§5)", 10, "0.087 s", "0.046 s", "4.9 µs"),
    ("convolution (§5)", 11, "0.076 s", "0.038 s", "5.1 µs"),
)


def section_properties_speed() -> list[str]:
    return ["## Property extraction and evaluation speed (historical)", "",
            "`benchmarks/properties_speed.py` prints, per kernel, the first "
            "`extract_properties` in a fresh process (Loopy's disk cache disabled), the "
            "median of further extractions, and the mean cost of `Properties.evaluate`; it "
            "writes no data file, so this page does not regenerate it. Its last published "
            "figures, of 2026-11-22 (development machine: x86-64, 2 cores, Python 3.11.7), "
            "as history — run `.venv/bin/python benchmarks/properties_speed.py` for "
            "today's. Targets (issue 2): extraction ≤ 2 s, evaluation ≤ 50 µs.", "",
            table(["kernel", "properties", "first extract", "then median", "evaluate"],
                  [list(r) for r in PROPERTIES_SPEED])]
