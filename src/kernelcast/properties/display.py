"""Human- and machine-readable renderings of extracted properties.

Public names: properties_table, properties_json.
"""

from __future__ import annotations

from kernelcast.properties.result import Properties
from kernelcast.properties.vocabulary import UNITS


def _fmt_count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.6g}"


def properties_table(props: Properties, params: dict | None = None) -> str:
    """A plain-text table: each property, its value at *params* (if given), its formula."""
    values = props.evaluate(params) if params is not None else {}
    where = ", ".join(f"{k}={v}" for k, v in (params or {}).items())
    header = ["property", f"count at {where}" if params is not None else None, "symbolic"]
    header = [h for h in header if h]
    rows = []
    for name in props.names:
        formula = str(props.symbolic(name))
        formula = formula.split("->", 1)[-1].strip() if "->" in formula else formula
        row = [name, _fmt_count(values[name]) if params is not None else None, formula]
        rows.append([c for c in row if c is not None])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = [f"kernel {props.kernel_name}: properties of one launch, totals over all "
             f"work-items; parameters ({', '.join(props.params)})"]
    if props.statistics:
        lines.append("data statistics: " + ", ".join(
            f"{k}={v}" for k, v in props.statistics.items()))
    for row in [header, *rows]:
        cells = [c.ljust(w) for c, w in zip(row[:-1], widths)]
        lines.append("  ".join([*cells, row[-1]]))
    ref = ", ".join(f"{k}={v}" for k, v in props.reference.items())
    lines.append(f"global access sites (stride class decided at {ref or 'no parameters'}):")
    for a in props.accesses:
        util = "" if a.utilization is None else f" utilization {float(a.utilization):.3f}"
        stride = "data-dependent" if a.stride is None else str(a.stride)
        lines.append(f"  {a.instruction}: {a.direction} {a.array} ({a.bits}-bit), "
                     f"stride {stride}{util} -> {a.stride_class}")
    return "\n".join(lines)


def properties_json(props: Properties, params: dict | None = None) -> dict:
    """A JSON-ready dict of the properties, their units and formulas, and access sites."""
    values = props.evaluate(params) if params is not None else {}
    return {
        "kernel": props.kernel_name,
        "parameters": list(props.params),
        "values_at": params,
        "data_statistics": props.statistics,
        "reference": props.reference,
        "properties": {
            name: {"symbolic": str(props.symbolic(name)), "unit": UNITS[name],
                   "value": values.get(name)}
            for name in props.names},
        "accesses": [
            {"instruction": a.instruction, "array": a.array, "direction": a.direction,
             "bits": a.bits, "stride": a.stride,
             "utilization": None if a.utilization is None else float(a.utilization),
             "class": a.stride_class, "property": a.property_name}
            for a in props.accesses],
    }
