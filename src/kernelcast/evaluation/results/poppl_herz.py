"""Pöppl–Herz and every model on random kernels, from data/<device>/random-eval.json
(benchmarks/poppl_herz.py evaluate; H100, H200 and PoCL): the share of random kernels
within 0.7–1.3 of their measured time per model, device and set beside the slides'
figures, which kinds of kernel each model misses, the fitted models predicting the
OpenCL source directly against their Loopy twins, and the predicted-against-measured
figure (drawn by the page's Figures).

Public names: POPPL_HERZ_SLIDES, POPPL_HERZ_DIRS, POPPL_HERZ_MODELS, section_poppl_herz.
"""

from __future__ import annotations

import json

from kernelcast.evaluation.results.common import Data, Figures, pct, table

# Pöppl & Herz, "A cache-aware performance prediction framework for GPGPU computations",
# slides 27-29: fraction of random kernels with 0.7 < predicted/measured
# < 1.3 for their cache-aware model.
POPPL_HERZ_SLIDES = {"GT 650M": (0.63, 0.50), "Quadro K4000": (0.71, 0.43)}
POPPL_HERZ_DIRS = (("h100", "H100"), ("h200", "H200"), ("pocl", "PoCL (CPU)"))
POPPL_HERZ_MODELS = {"poppl-herz": "Pöppl–Herz (classes)",
                     "poppl-herz-simple": "Pöppl–Herz (simple)",
                     "poppl-herz-facts": "Pöppl–Herz (facts)", "paper": "paper",
                     "extended": "extended", "hong-kim": "Hong–Kim",
                     "grophecy": "GROPHECY (launch)"}


def _poppl_herz_failures(docs) -> list[str]:
    """Which kernels each model misses: the fraction within 0.7–1.3 per kind of kernel,
    both sets together, on the first device (the tags come from the OpenCL source)."""
    label, doc = docs[0]
    if "tags" not in doc:
        return []
    models = [m for m in POPPL_HERZ_MODELS if "sets" in doc["models"].get(m, {})]
    groups: dict = {}
    for set_name in ("realistic", "unrestricted"):
        for i, tags in enumerate(doc["tags"][set_name]):
            for tag in [f"{set_name}: all", *(f"{set_name}: {t}" for t in tags)]:
                groups.setdefault(tag, []).append((set_name, i))
    rows = []
    for tag, members in sorted(groups.items()):
        row = [tag, str(len(members))]
        for model in models:
            sets = doc["models"][model]["sets"]
            ratios = [sets[s]["ratios"][i] for s, i in members]
            inside = sum(1 for r in ratios if r is not None and 0.7 < r < 1.3)
            row.append(pct(inside / len(ratios), 0))
        rows.append(row)
    return [f"Which kernels fail, on the {label}: the fraction within 0.7–1.3 by what the "
            "kernel has (a kernel counts in each of its kinds; *complex reads*: a global "
            "read of the complex class, docs/opencl.md; *interval reads*: a global read of "
            "the interval class, such as `xxx[x & 0x7F]`, which the paper's properties "
            "class as irregular; *int div/mod*: an integer division "
            "or remainder; *group < warp multiple*: a work-group size that is not a "
            "multiple of 32; *n=N*: the N × N matrix, 4, 16 or 64 MiB of floats). The "
            "paper's properties class an index that is not affine as irregular, and the "
            "measurement suite's irregular loads are gathers from large arrays, so a "
            "masked lookup into the 128-float table, which a warp reads like a coalesced "
            "row, is priced as a gather by the extended and Hong–Kim models: compare their "
            "*interval reads* and *no interval read* rows.", "",
            table(["kernels", "count"] + [POPPL_HERZ_MODELS[m] for m in models], rows), ""]


def _poppl_herz_source(docs) -> list[str]:
    """The fitted models predicting the OpenCL source from its paper properties, beside
    their predictions of the Loopy twin."""
    rows = []
    for label, doc in docs:
        for model, name in POPPL_HERZ_MODELS.items():
            sets = doc["models"].get(model, {}).get("sets", {})
            if not all("opencl_source" in sets.get(s, {}) for s in ("realistic", "unrestricted")):
                continue
            row = [label, name]
            for key in ("within_30pct", "geomean_rel_error"):
                row += [f"{pct(sets[s][key], 0)} → {pct(sets[s]['opencl_source'][key], 0)}"
                        for s in ("realistic", "unrestricted")]
            agree = [sets[s]["opencl_source"]["versus_twin"] for s in ("realistic",
                                                                     "unrestricted")]
            row += [" / ".join(pct(a["equal_1pct"], 0) for a in agree),
                    " / ".join(pct(a["within_10pct"], 0) for a in agree),
                    " / ".join(f"{a['median_deviation']:.1%}" for a in agree)]
            rows.append(row)
    if not rows:
        return []
    return ["**Beyond the slides: the fitted models predicting OpenCL source directly.** "
            "Each random kernel's OpenCL C is turned into the paper's properties at its "
            "launch (`kernelcast.properties.opencl`, docs/opencl.md, \"The "
            "paper's properties of OpenCL source\"), with no Loopy kernel, and the same "
            "fitted model predicts from them. *twin → source*: the figure when predicting "
            "the Loopy twin, then when predicting the source; *equal*: the share of kernels "
            "whose two predictions differ by less than 1% (realistic / unrestricted); "
            "*within 10%*: by less than 10%; *median gap*: the median |source / twin − 1|. "
            "The two differ where the front-end folds an operation on literals that the "
            "twin counts, and in the arrays' sizes (the extended model's data volume: "
            "declared in the twin, what the indices reach in the source).", "",
            table(["device", "model", "within, realistic", "within, unrestricted",
                   "geomean, realistic", "geomean, unrestricted", "equal (1%)",
                   "within 10%", "median gap"], rows), ""]


def section_poppl_herz(data: Data, figures: Figures | None = None) -> list[str]:
    out = ["## Pöppl–Herz and every model on random kernels", ""]
    docs = [(label, json.loads((data / d / "random-eval.json").read_text(encoding="utf-8")))
            for d, label in POPPL_HERZ_DIRS if (data / d / "random-eval.json").exists()]
    if not docs:
        return out + ["*Not generated: no data/<device>/random-eval.json "
                      "(benchmarks/poppl_herz.py evaluate).*"]
    out += ["Random kernels of the slides' two sets (`kernelcast.suites.random_kernels`, "
            "docs/random-kernels.md), each timed as OpenCL C source; no random kernel is in "
            "any fitting set. Pöppl–Herz is fitted from its own microbenchmarks "
            "(`kernelcast.suites.poppl_herz`) and predicts from the source; "
            "*Pöppl–Herz (facts)* (`kernelcast.models.poppl_herz.facts`) is the same fit "
            "with its global accesses priced by the bytes L1, L2 and DRAM serve (the Loopy "
            "twin's predicted facts; DRAM at the fitted coalesced access's cost per byte, "
            "L2 and L1 at the measured ratio of the levels' load throughputs), which "
            "neither the slides nor the paper model; the "
            "paper and extended models from the measurement suite of the same device and "
            "backend, predicting the kernels' Loopy twins; Hong–Kim from the device's "
            "measured hardware description; GROPHECY projects a code skeleton of each "
            "kernel (`RandomKernel.skeleton_source`, docs/random-kernels.md) at the "
            "kernel's own launch (not the best layout of its search) through Hong–Kim with "
            "the same hardware. *within*: fraction of kernels with 0.7 < "
            "predicted/measured < 1.3 (the slides' figure); *geomean*: geometric mean of "
            "|predicted/measured − 1|. Regenerated by `benchmarks/poppl_herz.py evaluate` "
            "into data/<device>/random-eval.json.", "",
            "The slides, cache-aware model: "
            + "; ".join(f"{gpu} {pct(r)} realistic, {pct(u)} unrestricted"
                        for gpu, (r, u) in POPPL_HERZ_SLIDES.items())
            + " (and 71% against 61% for their simple model on one set).", ""]
    rows = []
    for label, doc in docs:
        dev = doc["device"]
        for model, name in POPPL_HERZ_MODELS.items():
            entry = doc["models"].get(model)
            if entry is None:
                continue
            if "error" in entry:
                rows.append([label, name, "—", "—", "—", "—", entry["error"][:60]])
                continue
            sets = entry["sets"]
            rows.append([label, name]
                        + [pct(sets[s]["within_30pct"], 0) for s in ("realistic", "unrestricted")]
                        + [pct(sets[s]["geomean_rel_error"], 0)
                           for s in ("realistic", "unrestricted")]
                        + [f"{sets['realistic']['kernels']} / {sets['unrestricted']['kernels']}"
                           f", median ratio {sets['realistic']['median_ratio']:.2f} / "
                           f"{sets['unrestricted']['median_ratio']:.2f}"])
        out += [f"- {label}: {dev['device']}, driver {dev['driver']}, measured "
                f"{dev['date'][:10]}; preferred work-group multiple "
                f"{dev['preferred_work_group_size_multiple']}."]
    out += ["", table(["device", "model", "within, realistic", "within, unrestricted",
                       "geomean, realistic", "geomean, unrestricted",
                       "kernels, median predicted/measured"], rows), ""]
    out += _poppl_herz_failures(docs)
    out += _poppl_herz_source(docs)
    if figures is not None:
        figures.random_kernels(docs, POPPL_HERZ_MODELS, figures.folder / "random-kernels.png")
    out += ["![predicted/measured per model, device and set](figures/random-kernels.png)",
            "", "Predicted against measured run time per model (columns) and device (rows), "
            "log-log; the solid line is exact, the dotted ones 0.7× and 1.3×.", ""]
    return out
