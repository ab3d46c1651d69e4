"""The package's shape, read from the source with ast: kernelcast's top-level packages
import one another only downwards in LAYERS (so there is no cycle among them), none uses
another's private names, and `import kernelcast` loads no GPU library.

Every import counts: at module level or inside a function, absolute or relative
(``from . import x``). A failure lists each offending import as file:line.
"""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# kernelcast's top-level packages and modules, lowest first. A package may import its own
# modules and those of earlier layers; the packages of one layer import none of each other.
#
# DESIGN.md's layout ("A layout that shows this") lists errors, frontends, properties,
# facts, suites, measure, models, fitting, evaluation, tune, profile, report and cli in
# the order data flows through its picture; imports follow that order, except where the
# code uses a later stage as a library:
# - measure sits below properties, facts and suites: suites hand it jobs to run
#   (suites.campaign calls measure.campaign), and facts compile the very code that
#   measure times (measure.codegen);
# - fitting sits below models: a model's fit(dataset) takes a fitting.Dataset and calls
#   fitting's pure fit functions.
# Modules DESIGN.md does not draw:
# - version, metrics (relative-error metrics) and units (format_seconds) are leaves:
#   fitting and the models score fits with metrics, as evaluation does, and a model's
#   warning writes a time as the report's tables do;
# - hardware (the packaged GPU descriptions) reads its JSON through frontends.files and is
#   read by facts, models, tune and profile;
# - workflow (calibrate, demo: measure → fit → profile) and the package root (its lazy
#   facade, kernelcast/__init__.py) are the library's entry points, under the CLI alone.
LAYERS = (
    ("errors", "version"),
    ("metrics", "units"),
    ("frontends",),
    ("hardware",),
    ("measure",),
    ("properties",),
    ("facts",),
    ("suites",),
    ("fitting",),
    ("models",),
    ("evaluation",),
    ("tune",),
    ("profile", "report"),
    ("workflow", "kernelcast"),
    ("cli",),
    ("__main__",),
)
LAYER = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}

def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "kernelcast").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _unit(module: str) -> str:
    """The top-level package or module of kernelcast that *module* belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _where(path: Path, node) -> str:
    return f"{path.relative_to(ROOT)}:{node.lineno}"


def _imports(module: str, path: Path, tree) -> list:
    """(node, imported module, imported name or None, local name) of every kernelcast
    import in *tree*; ``from M import x`` where M.x is a module imports M.x."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node, a.name, None, a.asname or a.name.partition(".")[0])
                    for a in node.names if a.name.split(".")[0] == "kernelcast"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] != "kernelcast":
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                out.append((node, full, None, a.asname or a.name) if full in MODULES
                           else (node, base, a.name, a.asname or a.name))
    return out


def _scan():
    """(edges, private uses) over every module: edges are (importer,
    imported module, file:line); a private use is (file:line, what), a name starting with
    one underscore of another top-level package, imported or read as an attribute of an
    imported kernelcast module."""
    edges, private = [], []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        unit, bound = _unit(module), {}
        for node, target, name, local in _imports(module, path, tree):
            edges.append((module, target, _where(path, node)))
            if _unit(target) == unit:
                continue
            if any(_private(p) for p in target.split(".")) or (name and _private(name)):
                private.append((_where(path, node), f"{target}{'.' + name if name else ''}"))
            if name is None:  # the local name holds the module (or kernelcast, for import a.b)
                bound[local] = target if local != "kernelcast" else "kernelcast"
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                owner = ".".join([bound[value.id], *chain])
                if _unit(owner) != unit:
                    private.append((_where(path, node), f"{owner}.{node.attr}"))
    return edges, private


EDGES, PRIVATE = _scan()


def _between_units():
    return sorted({(a, b, where) for a, b, where in EDGES if _unit(a) != _unit(b)})


def _upward(a: str, b: str) -> bool:
    """Whether module *a* importing *b* goes against LAYERS (a package not in LAYERS is
    below everything, so that its imports are listed)."""
    return LAYER.get(_unit(a), -1) <= LAYER.get(_unit(b), -1)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of *graph* with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on.discard(component[-1])
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _cycle_report(edges, node) -> str:
    """Each cycle among the nodes (``node(module)``) of *edges*, with its imports; only
    those against LAYERS where there are some (a cycle of many packages has many)."""
    graph = {}
    for a, b, _ in edges:
        graph.setdefault(node(a), set()).add(node(b))
    lines = []
    for cycle in _cycles(graph):
        inside = [e for e in edges if node(e[0]) in cycle and node(e[1]) in cycle]
        upward = [e for e in inside if _upward(e[0], e[1])]
        lines.append("cycle " + " ↔ ".join(cycle) + (", closed by:" if upward else ":"))
        lines += [f"  {where}: {a} imports {b}" for a, b, where in upward or inside]
    return "\n".join(lines)


def test_every_top_level_package_has_a_layer():
    found = {_unit(m) for m in MODULES}
    assert found == set(LAYER), (f"not in LAYERS: {sorted(found - set(LAYER))}; "
                                 f"in LAYERS but gone: {sorted(set(LAYER) - found)}")


def test_no_import_cycle_between_top_level_packages():
    report = _cycle_report(_between_units(), _unit)
    assert not report, "\n" + report


def test_no_import_cycle_between_modules():
    """Module by module; a package's __init__ importing its own submodules (to re-export
    them) is not counted."""
    edges = sorted({(a, b, where) for a, b, where in EDGES if a != b and not (
        MODULES[a].name == "__init__.py" and b.startswith(a + "."))})
    report = _cycle_report(edges, lambda m: m)
    assert not report, "\n" + report


def test_packages_import_only_lower_layers():
    bad = [f"  {where}: {a} imports {b} ({_unit(a)} is not above {_unit(b)})"
           for a, b, where in _between_units() if _upward(a, b)]
    assert not bad, "\nimports against LAYERS:\n" + "\n".join(bad)


def test_no_private_name_of_another_package():
    assert not PRIVATE, "\nprivate names of another package:\n" + "\n".join(
        f"  {where}: {what}" for where, what in PRIVATE)


def test_import_loads_no_gpu_library():
    """cupy (the CUDA backend's) is imported only when that backend is made, Dask only
    when a cluster is asked for (kernelcast.tune.distributed); pyopencl is not checked:
    Loopy itself imports it."""
    code = ("import sys, kernelcast, kernelcast.cli, kernelcast.workflow, "
            "kernelcast.tune.tuner; print(sorted(m for m in ('cupy', 'pycuda', 'dask', "
            "'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
