"""What the evidence supports, and what it does not: the independent held-out set's
geometric-mean errors (quoted, their data are not in data/) beside the validation errors
on this page's stores; what the nine validation kernels (kernelcast.suites.validation)
are and leave out; N-body's test error per store and model, with what the compiler
decides that the counts cannot see: the SASS listings data/h100/sass/sass-<backend>.txt
counted here (``sass_summary``) and the timings of data/h100/index-probe.txt.

Public names: HELD_OUT, sass_summary, section_evidence.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernelcast.evaluation.results.common import (BACKEND_LABEL, BACKENDS, GPUS,
                                                  MODEL_LABEL, STORES, Data, overall, pct,
                                                  published, store_label, table)

# A held-out set of common HPC kernels measured outside this repository (H100, H200):
# its data are not in data/, so these figures are quoted, not computed.
HELD_OUT = {"extended": (0.21, 0.18), "paper": (0.38, 0.30),
            "roofline (unique bytes, measured peaks)": (0.29, 0.34)}


def sass_summary(path: Path, kernels) -> dict:
    """Per kernel section of a SASS listing: instructions, BSSY (branch regions),
    MUFU (special-function unit), LDS (local loads) and predicated LDS."""
    result, name, counts = {}, None, None
    for line in path.read_text(errors="replace").splitlines():
        head = re.match(r"^// (\S+) \((\S+)\)", line)
        if head:
            name = head.group(2)
            counts = result.setdefault(name, {"instructions": 0, "BSSY": 0, "MUFU": 0,
                                               "LDS": 0, "LDS predicated": 0})
            continue
        if counts is None or not re.search(r"/\*[0-9a-f]{4,}\*/", line):
            continue
        counts["instructions"] += 1
        op = re.sub(r"/\*[0-9a-f]+\*/", "", line).strip()
        predicated = op.startswith("@")
        word = op.split()[1] if predicated and len(op.split()) > 1 else (op.split() or [""])[0]
        for key in ("BSSY", "MUFU", "LDS"):
            if word.startswith(key):
                counts[key] += 1
                if key == "LDS" and predicated:
                    counts["LDS predicated"] += 1
    return {k: v for k, v in result.items() if k in kernels}


def section_evidence(data: Data, results, names) -> list[str]:
    out = ["## What the evidence supports, and what it does not", ""]
    val = {}
    for key in STORES:
        entry = results.get(key, {}).get("models", {})
        for name in names:
            if "validation" in entry.get(name, {}):
                val.setdefault(name, {})[key] = overall(entry[name]["validation"])
    ext = val.get("extended", {})
    ext_range = (f"{pct(min(ext.values()))}–{pct(max(ext.values()))}" if ext else "–")
    ratios = [HELD_OUT["extended"][GPUS.index(gpu)] / v for (gpu, _), v in ext.items() if v]
    gap = (f"The held-out errors are {min(ratios):.1f}–{max(ratios):.1f} times the "
           "validation errors of the same GPU on this page" if ratios else
           "The held-out errors are higher")
    out += ["### An independent held-out set", "",
            "The issue's author (issue 20) timed an independent held-out set of common HPC "
            "kernels — 12 kernels × 3 sizes, on an H100 and an H200, by the paper's "
            "protocol, 2026-11-22 — and reports these geometric-mean errors. The data are "
            "not in this repository, so the figures are quoted, not regenerated:", "",
            table(["model", "H100", "H200"],
                  [[name, published(h100), published(h200)]
                   for name, (h100, h200) in HELD_OUT.items()]), "",
            f"On the project's own nine validation kernels the extended model's error is "
            f"{ext_range} on the four stores (this page; the issue quotes 10–12%). "
            f"{gap}; that gap is the measure of how far the validation figures "
            "generalize: **the validation set "
            "is narrow, and its figures are not the error to expect on arbitrary "
            "kernels.** On the held-out set the extended model is still better than the "
            "paper's model and than a roofline, on both GPUs.", "",
            "### What the nine validation kernels are, and what they leave out", ""]
    try:
        from kernelcast.suites.validation import VALIDATION

        rows = []
        for kclass in VALIDATION.classes:
            rows.append([kclass.name, kclass.section, ", ".join(kclass.dtypes),
                         ", ".join("×".join(str(x) for x in g) if g[1] != 1 else str(g[0])
                                   for g in kclass.group_sizes)])
        out += [table(["kernel", "what it computes", "precision", "work-group"], rows,
                      ["l", "l", "l", "l"]), ""]
    except Exception as err:  # noqa: BLE001
        out += [f"*The list of validation kernels could not be read: {err}.*", ""]
    out += ["All nine are dense, affine-indexed array kernels written in Loopy in the "
            "same style as the fitting suites (the same group sizes, the same code "
            "generator, mostly float32), each at four to six sizes. They do **not** "
            "cover:", "",
            "- irregular or indirect access: gathers, scatters, sparse matrices, indices "
            "read from memory;",
            "- atomics;",
            "- reductions across work-groups, or tree reductions in local memory "
            "(`column_sums` and the matrix–vector products reduce serially inside one "
            "work-item);",
            "- integer-heavy code (hashing, sorting, index arithmetic as the main work);",
            "- data-dependent branches beyond a few bounds checks;",
            "- kernels limited by registers or local memory (occupancy), mixed precision, "
            "or sequences of launches;",
            "- any code not generated by Loopy, where the compiler may make other "
            "decisions from what the counts see (next section).", ""]
    out += ["### N-body stays at its measured error", ""]
    rows = []
    for key in STORES:
        entry = results.get(key, {}).get("models", {})
        row = [store_label(*key)]
        for name in names:
            tab = entry.get(name, {}).get("test")
            if tab is None:
                row.append("–")
                continue
            nb = tab[tab.kernel_class == "nbody"]
            if not len(nb):
                row.append("–")
                continue
            from kernelcast.metrics import geometric_mean

            sign = (nb.predicted_s - nb.measured_s).mean()
            row.append(f"{pct(geometric_mean(nb.rel_error))} "
                       f"({'over' if sign > 0 else 'under'})")
        rows.append(row)
    out += ["Issue 6 asked for no test kernel above 15%. N-body does not meet it, and "
            "the decision (issue 6, closed as blocked) is to leave it at its measured "
            "error, documented. Its geometric-mean error per store (over- or "
            "under-predicted on average; Table 1 above has every case):", "",
            table(["store", *(MODEL_LABEL[n] for n in names)], rows), "",
            "The reasons found are decisions of the compiler that counts taken from the "
            "Loopy kernel cannot see:", "",
            "- *Predication against branching.* Whether the compiler keeps a branch per "
            "guarded iteration (`BSSY`/`BSYNC` regions in the SASS) or predicates the body "
            "depends on how many instructions the body has. N-body's iterations keep "
            "their branches; the shorter `guarded` bodies with a local load are "
            "predicated and cost a fraction of a branched one.",
            "- *cupy's `-ftz=true`.* The CUDA backend compiles with flush-to-zero, so an "
            "f32 rsqrt is one `MUFU.RSQ` where OpenCL's denormal-preserving one takes "
            "several instructions; that is enough to make the same body predicated on one "
            "backend and branched on the other.",
            "- *Index arithmetic on serialized paths.* A masked (non-affine) index costs "
            "integer instructions on every serialized step; N-body's affine index costs "
            "none.", ""]
    sass_dir = data / "h100" / "sass"
    kernels = ("nbody", "guarded_special", "guarded_local", "guarded_global")
    if sass_dir.exists():
        about = (sass_dir / "ABOUT.txt").read_text().strip().replace("\n", " ") \
            if (sass_dir / "ABOUT.txt").exists() else ""
        rows = []
        for backend in BACKENDS:
            path = sass_dir / f"sass-{backend}.txt"
            if not path.exists():
                continue
            summary = sass_summary(path, kernels)
            for kernel in kernels:
                if kernel in summary:
                    c = summary[kernel]
                    rows.append([kernel, BACKEND_LABEL[backend], c["instructions"],
                                 c["BSSY"], c["MUFU"],
                                 f"{c['LDS']} ({c['LDS predicated']} predicated)"])
        out += [f"The machine code in `{data.rel(sass_dir)}` (its ABOUT.txt: \"{about.rstrip('.')}\"), "
                "counted by this script; `BSSY` opens a branch region, `MUFU` is the "
                "special-function unit (one per rsqrt), `LDS` a local load:",
                "", table(["kernel", "backend", "instructions", "BSSY (branch regions)",
                           "MUFU", "LDS"], rows), ""]
    else:
        out += [data.missing(sass_dir), ""]
    probe = data / "h100" / "index-probe.txt"
    if probe.exists():
        timing, code, tail = {}, {}, []
        for line in probe.read_text().splitlines():
            m = re.match(r"^(\w+): m = (\d+) ([\d.]+) µs, m = (\d+) ([\d.]+) µs, "
                         r"([\d.]+) ns per term", line)
            s = re.match(r"^(\w+): BSSY (\d+), LDS (\d+) \((\d+) predicated\).*"
                         r"MUFU (\d+), instructions (\d+)", line)
            if m:
                timing[m.group(1)] = float(m.group(6))
            elif s:
                code[s.group(1)] = (int(s.group(2)), int(s.group(3)), int(s.group(4)))
            elif line.strip():
                tail.append(line.strip())
        meaning = {"mask": "one rsqrt term per step, masked index",
                   "affine": "one rsqrt term per step, affine index",
                   "affine_broadcast": "as affine, every work-item reading the same value",
                   "mask_3d": "N-body's pair term, masked index",
                   "affine_3d": "N-body's pair term, affine index (as N-body)"}
        rows = [[name, meaning.get(name, ""), f"{timing[name]:.1f} ns",
                 *(code[name][:1] if name in code else ("–",)),
                 f"{code[name][1]} ({code[name][2]} predicated)" if name in code else "–"]
                for name in timing]
        out += [f"`benchmarks/device_index_probe.py` (`{data.rel(probe)}`: "
                f"{', '.join(tail)}): hand-written OpenCL kernels of N-body's structure, "
                "time per serialized step:", "",
                table(["probe", "what", "per step", "BSSY", "LDS"], rows,
                      ["l", "l", "r", "r", "r"]), ""]
        if all(k in timing for k in ("mask", "affine", "mask_3d", "affine_3d")):
            out.append(
                f"One rsqrt term costs {timing['mask']:.1f} ns a step where its body is "
                f"branched (masked index) and {timing['affine']:.1f} ns where it is "
                f"predicated (affine index, no `BSSY`): "
                f"{timing['mask'] / timing['affine']:.1f}× for the same arithmetic. "
                f"N-body's pair term, branched either way, costs {timing['mask_3d']:.1f} ns "
                f"through the masked index and {timing['affine_3d']:.1f} ns through the "
                "affine one. ")
        else:
            out.append("")
        out[-1] += (
                "Every count added to the model to follow these moved the weights N-body "
                "depends on by more than it corrected (docs/history.md, sections 6, 9, 10 "
                "and 14). Counting from the compiler's output (PTX or SASS) is left for later, "
                "to be judged on a broad population of kernels.")
    else:
        out.append(data.missing(probe))
    return out
