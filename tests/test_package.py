"""The package's shape: no import cycles among kernelcast's modules, the measurement layer
below suites and models, and `import kernelcast` loads no CUDA library."""

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every kernelcast module and the kernelcast modules it imports, at module level or
    inside functions, resolved to modules (``from pkg import name`` counts as pkg.name
    where that is a module, else pkg)."""
    modules = {_module(p): p for p in SRC.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                          else node.module for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_no_import_cycles():
    graph = _imports()
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    # a package's __init__ importing its own submodules is not a cycle through them
    real = [c for c in cycles if not all(a.startswith(c[0] + ".") or a == c[0]
                                         for a in c)]
    assert not real, "import cycles: " + "; ".join(" -> ".join(c) for c in real)


def test_the_measure_layer_does_not_import_suites_or_models():
    graph = _imports()
    for name, deps in graph.items():
        if name.startswith("kernelcast.measure"):
            assert not {d for d in deps if d.startswith(("kernelcast.suites",
                                                         "kernelcast.models"))}, name


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
