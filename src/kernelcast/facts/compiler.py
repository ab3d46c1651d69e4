"""What NVIDIA's compiler makes of a kernel, without a GPU: registers, spills, shared and
local memory, and the SASS instruction mix, static and executed per launch.

``compile_facts`` compiles Loopy's CUDA source as the CUDA backend's cupy does: NVRTC with
``-arch=sm_90 -ftz=true`` (cupy adds ``-ftz=true`` to every compile), here to PTX, then
``ptxas -v`` of the same release (13.0.88 from PyPI, as on the GPU machine) to a cubin,
disassembled by ``nvdisasm --print-line-info``; ``-lineinfo`` is added, which leaves the
SASS unchanged. NVRTC comes from PyPI's ``nvidia-cuda-nvrtc`` (or CUDA_HOME's lib64);
without it ``nvcc -ptx`` takes its place, whose front end makes other PTX (the suite's
nbody: 31 registers where NVRTC and the H100's cupy give 30). The tools are found in
PyPI's wheels first (nvidia/cu13/bin), then on PATH, then under CUDA_HOME; the facts
record which and their versions. Results are cached by the SHA-256 of the source, the
options and the tools' versions (``default_cache_dir``).

Executed counts (``CompilerFacts.dynamic_counts``) tie the SASS to the source:

1. The SASS is cut into basic blocks; back edges give its loops (natural loops).
2. Every instruction carries a source line (its outermost line in the generated .cu when
   inlined from a header). The source is parsed into its ``for``/``if`` tree. A SASS loop
   is the source loop whose ``for`` line its backward branch carries (else the innermost
   source loop holding most of its lines).
3. nvcc unrolls a loop of runtime trip count T into versions: loops that run u source
   iterations per pass (the main loop, u = 4 or ptxas's 16; a remainder loop, u = 1) and
   straight-line copies that run at most once (ptxas's 8 and 4 after a 16-loop). A loop's
   u is the step of the counter its backward branch compares, unless a pass of a loop
   over straight-line code holds one source iteration's float operations rather than u
   iterations' (nvcc counts 4·k for a loop over k that indexes by 4k); a straight-line
   block's u is its float arithmetic (else memory words) over one iteration's. The
   passes follow by taking the versions greedily, largest u first: a loop runs
   floor(rest / u) passes, a straight-line copy once if rest >= u.
4. A block inside the SASS loop of source loop L runs passes(T) times per entry of L; a
   block whose lines lie in L's body but outside its SASS loops (a preheader, an
   unrolled copy, a fully unrolled L) runs once per entry of L (times its copy's passes).
   Blocks reached by a branch whose instructions all lie in a source ``if`` run only in
   warps with a lane where the condition holds.
5. Loop bounds and conditions are evaluated on the launch's threads: every warp of up to
   8 blocks per grid axis (the first two, the last two and four spread between, weighted
   by the blocks they stand for), so a guard at the grid's edge is counted exactly.

   Where nvcc wrote a loop once per branch of a ``?:`` in its bound, the copies of
   one version share its passes equally; a loop of inlined library code (``sinf``'s
   reduction of huge arguments) and a block that calls a division's slow path (taken
   for denormal, infinite or out-of-range operands) are taken to be skipped. A loop's
   counter is the one its backward branch's predicate compares, wherever in the loop
   that comparison is (a division's checks split the body into many blocks).

A block's executions times its instructions give the warp-level instructions executed
(Nsight Compute's ``smsp__inst_executed.sum``) and, by class, the
``smsp__sass_inst_executed_op_{global,shared}_{ld,st}.sum`` counts. A predicated
instruction counts whether its predicate holds or not, as those counters do.

Public names: compile_facts, CompilerFacts, DynamicCounts, Instruction, find_tools,
default_cache_dir, BUILD_OPTIONS, FORMAT_VERSION.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from kernelcast.errors import (
    AssumedValueWarning,
    DataDependentError,
    KernelcastError,
    MissingDependencyError,
    UsageError,
)

FORMAT_VERSION = 1
# the options cupy's NVRTC compile of the CUDA backend uses (kernelcast.measure.backends.cuda
# passes none of its own; cupy.cuda.compiler adds -ftz=true and -arch=sm_XX)
BUILD_OPTIONS = ("-ftz=true",)
TOOLS = ("nvcc", "ptxas", "nvdisasm")
INSTALL_HINT = ("pip install 'kernelcast[test]' (nvidia-cuda-nvrtc or nvidia-cuda-nvcc, "
                "nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-nvdisasm)")


class CompilerError(KernelcastError):
    """NVIDIA's compiler or disassembler rejected the generated code."""


# {{{ tools

@dataclass(frozen=True)
class Tool:
    name: str
    path: str
    origin: str  # "pypi", "PATH" or "CUDA_HOME"
    version: str


def _pypi_folders() -> list[Path]:
    try:
        import nvidia
    except ImportError:
        return []
    return [Path(root) / sub / "bin" for root in nvidia.__path__
            for sub in ("cu13", "cu12", "cuda_nvcc", "cuda_nvdisasm")]


def _candidates(name: str):
    for folder in _pypi_folders():
        yield folder / name, "pypi"
    found = shutil.which(name)
    if found:
        yield Path(found), "PATH"
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            yield Path(os.environ[var]) / "bin" / name, var
    yield Path("/usr/local/cuda/bin") / name, "CUDA_HOME"


@cache
def _version(path: str) -> str:
    run = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"release [\d.]+, V([\d.]+)", run.stdout)
    return found.group(1) if found else run.stdout.strip().splitlines()[-1]


def find_tools() -> dict[str, Tool]:
    """NVRTC (else nvcc), ptxas and nvdisasm: PyPI's wheels first, then PATH, then
    CUDA_HOME; a missing one raises MissingDependencyError naming the packages."""
    tools = {}
    nvrtc = _nvrtc()
    if nvrtc is not None:
        tools["nvrtc"] = nvrtc[1]
    for name in TOOLS:
        if name == "nvcc" and nvrtc is not None:
            continue
        for path, origin in _candidates(name):
            if path.is_file() and os.access(path, os.X_OK):
                tools[name] = Tool(name, str(path), origin, _version(str(path)))
                break
        else:
            raise MissingDependencyError(f"NVIDIA's {name} is not installed: {INSTALL_HINT}")
    return tools


def _nvrtc_candidates():
    for folder in _pypi_folders():
        yield folder.parent / "lib" / "libnvrtc.so.13", "pypi"
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            yield Path(os.environ[var]) / "lib64" / "libnvrtc.so", var
    yield Path("/usr/local/cuda/lib64/libnvrtc.so"), "CUDA_HOME"


@cache
def _nvrtc() -> tuple | None:
    """(the loaded libnvrtc, Tool) or None: PyPI's first, then CUDA_HOME's."""
    import ctypes

    for path, origin in _nvrtc_candidates():
        if not path.is_file():
            continue
        for builtins in sorted(path.parent.glob("libnvrtc-builtins.so.*")):
            if "alt" not in builtins.name:  # loaded first, so libnvrtc's dlopen finds it
                ctypes.CDLL(str(builtins), mode=ctypes.RTLD_GLOBAL)
                break
        try:
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        version = f"{major.value}.{minor.value}"
        if origin == "pypi":
            from importlib.metadata import PackageNotFoundError
            from importlib.metadata import version as dist_version

            try:
                version = dist_version("nvidia-cuda-nvrtc")
            except PackageNotFoundError:
                pass
        return lib, Tool("nvrtc", str(path), origin, version)
    return None


def _nvrtc_ptx(lib, source: str, options: list[str]) -> str:
    import ctypes

    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None,
                              None):
        raise CompilerError("NVRTC could not create a program")
    try:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        failed = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        if failed:
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise CompilerError("NVRTC failed: " + " ".join(log.value.decode().split())[:400])
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def default_cache_dir() -> Path:
    """``$KERNELCAST_CACHE_DIR/compiler``, else ``$XDG_CACHE_HOME/kernelcast/compiler``,
    else ``~/.cache/kernelcast/compiler`` (the properties cache's convention)."""
    if os.environ.get("KERNELCAST_CACHE_DIR"):
        return Path(os.environ["KERNELCAST_CACHE_DIR"]) / "compiler"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kernelcast" / "compiler"

# }}}


# {{{ compiling

_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                          r"(\d+) bytes spill loads")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_PTXAS_BARRIERS = re.compile(r"used (\d+) barriers")


def _run(command, what):
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode:
        message = " ".join((run.stderr or run.stdout).split())[:400]
        raise CompilerError(f"{what} failed: {message}")
    return run


def _compile(source: str, name: str, arch: str, tools: dict[str, Tool]) -> dict:
    with tempfile.TemporaryDirectory(prefix="kernelcast-nvcc-") as tmp:
        cu = Path(tmp) / "kernel.cu"
        ptx, cubin = cu.with_suffix(".ptx"), cu.with_suffix(".cubin")
        cu.write_text(source)
        if "nvrtc" in tools:
            compute = arch.replace("sm_", "compute_")
            ptx.write_text(_nvrtc_ptx(_nvrtc()[0], source,
                                      [f"-arch={compute}", *BUILD_OPTIONS, "-lineinfo"]))
        else:
            _run([tools["nvcc"].path, "-ptx", f"-arch={arch}", *BUILD_OPTIONS, "-lineinfo",
                  "-o", str(ptx), str(cu)], "nvcc")
        info = _run([tools["ptxas"].path, "-v", f"-arch={arch}", "-lineinfo", "-o",
                     str(cubin), str(ptx)], "ptxas").stderr
        sass = _run([tools["nvdisasm"].path, "-c", "--print-line-info", str(cubin)],
                    "nvdisasm").stdout
    block = info[info.find(f"Function properties for {name}"):] or info
    frame = _PTXAS_FRAME.search(block)
    smem = _PTXAS_SMEM.search(block)
    bars = _PTXAS_BARRIERS.search(block)
    regs = _PTXAS_REGS.search(block)
    if regs is None or frame is None:
        raise CompilerError(f"ptxas -v reported no resources for {name}: {info[:300]}")
    return {"registers": int(regs.group(1)), "stack_bytes": int(frame.group(1)),
            "spill_store_bytes": int(frame.group(2)),
            "spill_load_bytes": int(frame.group(3)),
            "shared_bytes": int(smem.group(1)) if smem else 0,
            "barriers": int(bars.group(1)) if bars else 0,
            "sass": _function_listing(sass, name)}


def _function_listing(listing: str, name: str) -> str:
    """nvdisasm's listing of the section of function *name*."""
    start = listing.find(f".text.{name}:")
    if start < 0:
        raise CompilerError(f"nvdisasm listed no function {name}")
    end = listing.find("//-----", start)
    return listing[start:end if end > 0 else len(listing)]


def compile_facts(generated, arch: str = "sm_90", cache_dir=None) -> CompilerFacts:
    """The CompilerFacts of *generated* (``kernelcast.measure.codegen.generate(knl,
    "cuda")``), compiled for *arch*; cached in *cache_dir* (default
    ``default_cache_dir()``)."""
    if getattr(generated, "target", "cuda") != "cuda":
        raise UsageError(f"compile_facts needs CUDA code (generate(knl, 'cuda')), got "
                         f"{generated.target!r}")
    tools = find_tools()
    key_data = {"format": FORMAT_VERSION, "source": generated.code, "name": generated.name,
                "arch": arch, "options": list(BUILD_OPTIONS),
                "tools": {t.name: t.version for t in tools.values()}}
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"{key}.json"
    entry = _read_entry(path, key_data)
    if entry is None:
        entry = {"key": key_data, **_compile(generated.code, generated.name, arch, tools)}
        _write_entry(folder, path, entry)
    return CompilerFacts.from_entry(entry, generated, tools)


def _read_entry(path: Path, key_data: dict) -> dict | None:
    try:
        entry = json.loads(path.read_text())
        if entry["key"] == key_data and isinstance(entry["sass"], str):
            return entry
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _write_entry(folder: Path, path: Path, entry: dict) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as out:
            json.dump(entry, out)
        os.replace(tmp, path)
    except OSError as err:
        warnings.warn(f"compiler cache {folder} not written: {err}", AssumedValueWarning,
                      stacklevel=3)

# }}}


# {{{ SASS

_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z0-9_.]+)\s*([^;]*);")
_LINE = re.compile(r'//## File "([^"]*)", line (\d+)(?:.*inlined at "([^"]*)", line (\d+))?')
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
_MEMORY = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "ATOM", "ATOMG", "ATOMS",
           "RED", "REDG", "LDSM", "LDGSTS")
_FLOAT = {"FFMA", "FADD", "FMUL", "DFMA", "DADD", "DMUL", "HFMA2", "HADD2", "HMUL2", "MUFU",
          "FMNMX", "DSETP", "FSETP", "FCHK", "HMMA", "DMMA"}
# Nsight Compute's launch__registers_per_thread is never below 16 on the H100: every suite
# kernel ptxas compiled to fewer (cuFuncGetAttribute: 4 to 14) reports 16 there
# (data/h100/criteria/counters.json.xz)
NCU_MIN_REGISTERS = 16
NCU_CLASSES = {"global_ld": ("LDG",), "global_st": ("STG",),
               "shared_ld": ("LDS", "LDSM"), "shared_st": ("STS",)}


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: address, predicate, opcode with modifiers, operands and the
    line of the generated source it comes from (0 when unknown)."""

    address: int
    predicate: str
    opcode: str
    operands: str
    line: int

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @property
    def width(self) -> int:
        """Bits a memory instruction moves per thread (32 unless a modifier says)."""
        for part in self.opcode.split(".")[1:]:
            if part in ("64", "128", "U8", "S8", "U16", "S16"):
                return int(part.lstrip("US"))
        return 32

    @property
    def kind(self) -> str:
        """The class key: the base opcode, with the width for memory (``LDG.128``). An
        ``S2R`` is ``S2R.CTAID`` where it reads the group's id, ``S2R.SHARED`` where it
        reads another special register (the thread's index, the cluster's id) without a
        predicate: on sm_90 those travel the shared-memory data path, one wavefront per
        warp (ncu's l1tex__data_pipe_lsu_wavefronts_mem_shared of kernels without
        shared memory equals their executed count in 235 of 237 H100 launches), and
        predicated ones ``S2R``."""
        if self.base == "S2R":
            if "SR_CTAID" in self.operands:
                return "S2R.CTAID"
            return "S2R" if self.predicate else "S2R.SHARED"
        return f"{self.base}.{self.width}" if self.base in _MEMORY else self.base


def parse_sass(listing: str) -> tuple[list, dict]:
    """Instructions of nvdisasm's listing and its labels' addresses."""
    instructions, labels, line = [], {}, 0
    pending = []
    for text in listing.splitlines():
        label = _LABEL.match(text)
        if label:
            pending.append(label.group(1))
            continue
        loc = _LINE.search(text)
        if loc:  # inlined code counts at the line of the kernel that inlined it
            line = int(loc.group(4) if loc.group(3) else loc.group(2))
            continue
        found = _INSN.search(text)
        if found:
            address = int(found.group(1), 16)
            for name in pending:
                labels[name] = address
            pending = []
            instructions.append(Instruction(address, (found.group(2) or "").strip(),
                                            found.group(3), found.group(4).strip(), line))
    for name in pending:
        labels[name] = instructions[-1].address + 16 if instructions else 0
    return instructions, labels


@dataclass
class Block:
    index: int
    instructions: list
    successors: list = field(default_factory=list)


def basic_blocks(instructions: list, labels: dict) -> list[Block]:
    """Basic blocks reachable from the entry, with their successors."""
    targets = set(labels.values())
    starts = {0}
    for i, insn in enumerate(instructions):
        if insn.address in targets:
            starts.add(i)
        if insn.base in ("BRA", "EXIT", "RET", "BRX", "JMX", "BREAK", "JMP") and \
                i + 1 < len(instructions):
            starts.add(i + 1)
    order = sorted(starts)
    by_address = {}
    blocks = []
    for n, start in enumerate(order):
        end = order[n + 1] if n + 1 < len(order) else len(instructions)
        blocks.append(Block(n, instructions[start:end]))
        by_address[instructions[start].address] = n
    for block in blocks:
        last = block.instructions[-1]
        falls = block.index + 1 < len(blocks)
        if last.base == "BRA":
            target = _TARGET.search(last.operands)
            if target and labels.get(target.group(1)) in by_address:
                block.successors.append(by_address[labels[target.group(1)]])
            if last.predicate and falls:
                block.successors.append(block.index + 1)
        elif last.base in ("EXIT", "RET"):
            if last.predicate and falls:
                block.successors.append(block.index + 1)
        elif falls:
            block.successors.append(block.index + 1)
    seen, stack = set(), [0]
    while stack:
        b = stack.pop()
        if b not in seen:
            seen.add(b)
            stack.extend(blocks[b].successors)
    return [b for b in blocks if b.index in seen]


def natural_loops(blocks: list[Block]) -> list[tuple[int, int, frozenset]]:
    """(header, latch, body) of each back edge latch -> header whose header dominates
    the latch."""
    index = {b.index: b for b in blocks}
    preds = {b.index: [] for b in blocks}
    for b in blocks:
        for s in b.successors:
            preds[s].append(b.index)
    every = set(index)
    dom = {b: set(every) for b in every}
    dom[blocks[0].index] = {blocks[0].index}
    changed = True
    while changed:
        changed = False
        for b in sorted(every):
            if b == blocks[0].index:
                continue
            new = set.intersection(*(dom[p] for p in preds[b])) if preds[b] else set()
            new = new | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    loops = []
    for b in blocks:
        for s in b.successors:
            if s in dom[b.index]:
                body, stack = {s}, [b.index]
                while stack:
                    n = stack.pop()
                    if n not in body:
                        body.add(n)
                        stack.extend(preds[n])
                loops.append((s, b.index, frozenset(body)))
    return loops

# }}}


# {{{ the generated source: its for/if tree and expressions

@dataclass(eq=False)
class Node:
    kind: str  # "root", "for", "if", "stmt"
    line: int
    parent: Node | None = None
    var: str = ""
    lower: str = ""
    upper: str = ""  # inclusive bound (Loopy writes var <= upper)
    cond: str = ""
    last_line: int = 0
    children: list = field(default_factory=list)

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


_FOR = re.compile(r"^\s*for \((?:int\w*|long|unsigned|int32_t|int64_t)\s+(\w+) = (.*?); "
                  r"\1 (<=|<) (.*); (?:\+\+\1|\1\+\+|\1 = \1 \+ 1|\1 \+= 1)\)\s*$")
_IF = re.compile(r"^\s*if \((.*)\)\s*$")


def parse_source(code: str) -> tuple[Node, dict[int, Node]]:
    """The for/if tree of Loopy's generated CUDA source and each line's innermost node."""
    lines = code.splitlines()
    root = Node("root", 0, last_line=len(lines))
    at: dict[int, Node] = {}
    start = next((i for i, t in enumerate(lines) if "__global__" in t), 0)
    i = start + 1
    while i < len(lines) and lines[i].strip() != "{":
        i += 1

    def statement(i: int, parent: Node) -> int:
        text = lines[i].strip()
        number = i + 1
        loop, cond = _FOR.match(lines[i]), _IF.match(lines[i])
        if loop:
            upper = loop.group(4) if loop.group(3) == "<=" else f"({loop.group(4)}) - 1"
            node = Node("for", number, parent, var=loop.group(1), lower=loop.group(2),
                        upper=upper)
        elif cond and text.startswith("if"):
            node = Node("if", number, parent, cond=cond.group(1))
        else:
            node = Node("stmt", number, parent, last_line=number)
            parent.children.append(node)
            at[number] = node
            return i + 1
        parent.children.append(node)
        at[number] = node
        j = body(i + 1, node)
        if node.kind == "if" and j < len(lines) and lines[j].strip() == "else":
            j = body(j + 1, node)  # the else branch is counted with the if's parent
        node.last_line = j
        return j

    def body(i: int, parent: Node) -> int:
        if lines[i].strip() == "{":
            i += 1
            while i < len(lines) and lines[i].strip() != "}":
                i = statement(i, parent) if lines[i].strip() else i + 1
            return i + 1
        return statement(i, parent)

    i += 1
    while i < len(lines) and lines[i].strip() != "}":
        i = statement(i, root) if lines[i].strip() else i + 1
    for line in range(1, len(lines) + 1):
        if line not in at:
            owner = root
            for node in _walk(root):
                if node.kind in ("for", "if") and node.line < line <= node.last_line:
                    owner = node
            at[line] = owner
    return root, at


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


_TOKEN = re.compile(r"\s*(?:(\d+\.\d*f?|\d+[uUlL]*)|(\w+)"
                    r"|(<=|>=|==|!=|&&|\|\||<<|>>|[-+*/%<>!?:(),&|^~]))")
_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%")]
_FUNCTIONS = {"min": "_min", "max": "_max", "abs": "abs"}


def c_to_python(expr: str) -> str:
    """A Python expression over numpy arrays for a C integer expression of Loopy's CUDA
    output (``bIdx(x)``, ``tIdx(y)``, ``?:``, ``&&``, C division and remainder)."""
    tokens = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            if expr[pos:].strip() == "":
                break
            raise UsageError(f"cannot read the expression {expr!r}")
        tokens.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    tokens = [t for t in tokens if t is not None]
    at = [0]

    def peek():
        return tokens[at[0]] if at[0] < len(tokens) else None

    def take(expected=None):
        t = peek()
        if expected is not None and t != expected:
            raise UsageError(f"cannot read the expression {expr!r}")
        at[0] += 1
        return t

    def ternary():
        cond = binary(0)
        if peek() == "?":
            take()
            yes = ternary()
            take(":")
            no = ternary()
            return f"_where({cond}, {yes}, {no})"
        return cond

    def binary(level):
        if level == len(_BINARY):
            return unary()
        left = binary(level + 1)
        while peek() in _BINARY[level]:
            op = take()
            right = binary(level + 1)
            left = {"||": f"_or({left}, {right})", "&&": f"_and({left}, {right})",
                     "/": f"_div({left}, {right})", "%": f"_mod({left}, {right})"}.get(
                op, f"({left} {op} {right})")
        return left

    def unary():
        t = peek()
        if t in ("-", "+", "~"):
            take()
            return f"({t}{unary()})"
        if t == "!":
            take()
            return f"_not({unary()})"
        return primary()

    def primary():
        t = take()
        if t == "(":
            if peek() in ("int", "long", "unsigned", "int32_t", "int64_t", "uint32_t",
                          "float", "double") and tokens[at[0] + 1] == ")":
                take()
                take(")")
                return unary()
            inner = ternary()
            take(")")
            return f"({inner})"
        if t is None:
            raise UsageError(f"cannot read the expression {expr!r}")
        if re.fullmatch(r"\d+[uUlL]*", t):
            return t.rstrip("uUlL")
        if re.fullmatch(r"\d+\.\d*f?", t):
            return t.rstrip("f")
        if peek() == "(":
            take()
            args = []
            while peek() != ")":
                args.append(ternary())
                if peek() == ",":
                    take()
            take(")")
            if t in ("bIdx", "tIdx"):
                return f"{t}_{args[0]}"
            if t.startswith("loopy_floor_div"):
                return f"_floordiv({args[0]}, {args[1]})"
            if t.startswith("loopy_mod"):
                return f"_floormod({args[0]}, {args[1]})"
            if t in _FUNCTIONS:
                return f"{_FUNCTIONS[t]}({', '.join(args)})"
            raise UsageError(f"cannot evaluate the call {t}() in {expr!r}")
        return t

    result = ternary()
    if at[0] != len(tokens):
        raise UsageError(f"cannot read the expression {expr!r}")
    return result


def _cdiv(a, b):
    q = np.floor_divide(a, b)
    return np.where((np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)),
                    q + 1, q)


_NAMESPACE = {
    "_where": np.where, "_and": np.logical_and, "_or": np.logical_or,
    "_not": np.logical_not, "_div": _cdiv,
    "_mod": lambda a, b: a - b * _cdiv(a, b), "_floordiv": np.floor_divide,
    "_floormod": np.remainder, "_min": np.minimum, "_max": np.maximum, "abs": np.abs,
}


@dataclass
class _Expr:
    text: str
    names: frozenset
    code: object

    @classmethod
    def of(cls, c_expr: str) -> _Expr:
        py = c_to_python(c_expr)
        names = frozenset(n for n in re.findall(r"\b[A-Za-z_]\w*\b", py)
                          if n not in _NAMESPACE)
        return cls(c_expr, names, compile(py, "<loopy bound>", "eval"))

    def __call__(self, env: dict):
        missing = self.names - env.keys()
        if missing:
            raise DataDependentError(f"the bound or condition {self.text!r} depends on "
                                     f"{', '.join(sorted(missing))}, not on parameters")
        return eval(self.code, _NAMESPACE, env)

# }}}


# {{{ facts

@dataclass(frozen=True)
class DynamicCounts:
    """Warp-level executions of one launch: per instruction class (``FFMA``, ``LDG.128``,
    ...) and in Nsight Compute's names (``counters``)."""

    by_kind: dict
    instructions: float
    warps: int

    def counters(self) -> dict[str, float]:
        out = {"smsp__inst_executed.sum": self.instructions}
        for name, bases in NCU_CLASSES.items():
            out[f"smsp__sass_inst_executed_op_{name}.sum"] = sum(
                v for k, v in self.by_kind.items() if k.split(".")[0] in bases)
        return out


@dataclass(frozen=True)
class _Region:
    """How one basic block is executed: its instructions' context in the source."""

    chain: tuple  # source nodes (for/if) from the outside in that govern the block
    loop: Node | None  # the source loop whose SASS loop holds the block (innermost)
    unroll: int  # source iterations per pass of that SASS loop
    copy: int  # for a straight-line copy of an unrolled loop: its iterations, else 0
    copy_loop: Node | None
    versions: tuple  # ((u, is_loop, alternatives), ...) of copy_loop or loop
    library: bool = False  # in a loop of inlined library code (a slow path)


@dataclass(frozen=True, eq=False)
class CompilerFacts:
    """What the compiler made of one kernel (see the module docstring)."""

    name: str
    arch: str
    options: tuple
    tools: dict  # tool name -> {"path", "origin", "version"}
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int  # local memory per thread
    shared_bytes: int  # static shared memory per group
    barriers: int
    sass: str = field(repr=False)
    source: str = field(repr=False)
    grid: tuple = field(repr=False, default=())
    block: tuple = field(repr=False, default=())

    @classmethod
    def from_entry(cls, entry: dict, generated, tools: dict) -> CompilerFacts:
        return cls(generated.name, entry["key"]["arch"], tuple(entry["key"]["options"]),
                   {t.name: {"path": t.path, "origin": t.origin, "version": t.version}
                    for t in tools.values()},
                   entry["registers"], entry["spill_store_bytes"], entry["spill_load_bytes"],
                   entry["stack_bytes"], entry["shared_bytes"], entry["barriers"],
                   entry["sass"], generated.code, tuple(generated.grid),
                   tuple(generated.block))

    @property
    def compiler(self) -> str:
        """The front end and assembler with their versions and origins."""
        front = self.tools.get("nvrtc") or self.tools["nvcc"]
        name = "nvrtc" if "nvrtc" in self.tools else "nvcc"
        t = self.tools["ptxas"]
        return (f"{name} {front['version']} ({front['origin']}) + ptxas {t['version']} "
                f"({t['origin']})")

    @cached_property
    def _parsed(self):
        instructions, labels = parse_sass(self.sass)
        return instructions, labels, basic_blocks(instructions, labels)

    @property
    def instructions(self) -> list[Instruction]:
        """The reachable instructions, in address order."""
        return [i for b in self._parsed[2] for i in b.instructions]

    @property
    def code_bytes(self) -> int:
        """Bytes of the kernel's SASS, alignment padding included."""
        listed = self._parsed[0]
        return listed[-1].address + 16 if listed else 0

    @property
    def sass_digest(self) -> str:
        """SHA-256 of the SASS instructions (addresses, opcodes, operands)."""
        text = "\n".join(f"{i.address} {i.predicate} {i.opcode} {i.operands}"
                         for i in self._parsed[0])
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def static_counts(self) -> dict[str, int]:
        """Instructions by class (base opcode; memory with width: ``LDS.64``)."""
        return dict(Counter(i.kind for i in self.instructions))

    def summary(self) -> dict:
        return {"name": self.name, "arch": self.arch, "options": list(self.options),
                "compiler": self.compiler, "tools": self.tools, "registers": self.registers,
                "spill_store_bytes": self.spill_store_bytes,
                "spill_load_bytes": self.spill_load_bytes, "stack_bytes": self.stack_bytes,
                "shared_bytes": self.shared_bytes, "barriers": self.barriers,
                "sass_digest": self.sass_digest, "static_counts": self.static_counts}

    # {{{ the mapping of SASS blocks to the source

    @cached_property
    def _mapping(self):
        _, _, blocks = self._parsed
        root, at = parse_source(self.source)
        loops = natural_loops(blocks)
        node_of = {}  # SASS loop (header, latch) -> source for node or None
        for header, latch, body in loops:
            node_of[(header, latch)] = _source_loop(blocks, header, latch, body, at)
        # innermost SASS loop holding each block
        holder = {}
        for key, (header, latch, body) in zip(node_of, loops):
            for b in body:
                if b not in holder or len(body) < len(_loop_body(loops, holder[b])):
                    holder[b] = key
        lines = self.source.splitlines()
        unroll = {key: _checked_step(_counter_step(blocks, key[1], body), node_of[key],
                                     blocks, loops, body, at, lines)
                  for key, (_, _, body) in zip(node_of, loops)}
        per_copy = _per_copy(blocks, loops, node_of, unroll, at)
        regions = {}
        for b in blocks:
            regions[b.index] = _region(b, blocks, loops, node_of, holder, unroll, per_copy,
                                       at)
        exprs = {}
        for node in _walk(root):
            if node.kind == "for":
                exprs[id(node)] = (_Expr.of(node.lower), _Expr.of(node.upper))
            elif node.kind == "if":
                exprs[id(node)] = (_Expr.of(node.cond),)
        return regions, exprs

    # }}}

    def dynamic_counts(self, params: dict) -> DynamicCounts:
        """Warp-level executions of each instruction class in one launch at *params*."""
        _, _, blocks = self._parsed
        regions, exprs = self._mapping
        env, weights, valid = _launch_env(self.grid, self.block, params)
        by_kind: Counter = Counter()
        total = 0.0
        cache = {}
        for b in blocks:
            region = regions[b.index]
            key = (region.chain, id(region.loop), region.unroll, region.copy,
                   id(region.copy_loop), region.versions, region.library)
            if key not in cache:
                cache[key] = _executions(region, exprs, env, weights, valid)
            runs = cache[key]
            if runs:
                for insn in b.instructions:
                    by_kind[insn.kind] += runs
                total += runs * len(b.instructions)
        warps = round(float(np.sum(weights * valid.any(axis=1))))
        return DynamicCounts(dict(by_kind), total, warps)

    def counters(self, params: dict) -> dict[str, float]:
        """The Nsight Compute counters these facts predict at *params*."""
        out = self.dynamic_counts(params).counters()
        out["launch__registers_per_thread"] = max(self.registers, NCU_MIN_REGISTERS)
        out["launch__shared_mem_per_block_static"] = self.shared_bytes
        return out


def _loop_body(loops, key):
    return next(body for h, latch, body in loops if (h, latch) == key)


def _source_loop(blocks, header, latch, body, at) -> Node | None:
    index = {b.index: b for b in blocks}
    branch = index[latch].instructions[-1]
    node = at.get(branch.line)
    if node is not None and node.kind == "for" and node.line == branch.line:
        return node
    votes = Counter()
    for b in body:
        for insn in index[b].instructions:
            n = at.get(insn.line)
            while n is not None and n.kind != "for":
                n = n.parent
            if n is not None:
                votes[id(n)] += 1
                votes.setdefault(("node", id(n)), n)
    ranked = [(c, k) for k, c in votes.items() if not isinstance(k, tuple)]
    if not ranked:
        return None
    return votes[("node", max(ranked)[1])]


_STEP = re.compile(r"^(U?R\d+), (U?P\w+, )?(U?R\d+), (-?0x[0-9a-f]+|-?\d+)")


def _counter_step(blocks, latch, body) -> int:
    """The step of the counter the backward branch's predicate compares (1 if unknown)."""
    index = {b.index: b for b in blocks}
    insns = [i for b in sorted(body) for i in index[b].instructions]
    branch = index[latch].instructions[-1]
    pred = branch.predicate.lstrip("@!")
    if not pred:
        return 1
    compared = None
    # the predicate is set in the latch or, where the body's blocks end in the
    # division's slow-path checks, earlier in the body
    searched = [*reversed(index[latch].instructions[:-1])] + [
        i for b in sorted(body, reverse=True) if b != latch
        for i in reversed(index[b].instructions)]
    for insn in searched:
        if insn.operands.split(",")[0].strip() != pred:
            continue
        if insn.base not in ("ISETP", "UISETP"):
            break  # the nearest write of the predicate compares no counter
        regs = [o.strip() for o in insn.operands.split(",")[2:4]]
        compared = [r.split(".")[0] for r in regs if re.fullmatch(r"U?R\d+(\.reuse)?", r)]
        break
    if not compared:
        return 1
    writes = [(i, [o.strip().split(".")[0] for o in i.operands.split(",")]) for i in insns
              if i.base in ("IADD3", "VIADD", "UIADD3", "IMAD", "MOV", "IMAD.MOV")]
    for _ in range(2):  # the compared value may be a sum of counters (R0 = R19 + R18)
        for insn, ops in writes:
            if ops and ops[0] in compared and ops[0] not in ops[1:]:
                compared += [o for o in ops[1:] if re.fullmatch(r"U?R\d+", o)
                             and o not in compared]
    for insn, ops in writes:
        if ops and ops[0] in compared and ops[0] in ops[1:]:
            for o in ops[1:]:
                if re.fullmatch(r"-?0x[0-9a-f]+|-?\d+", o):
                    step = abs(int(o, 16 if "x" in o else 10))
                    if step > 0x7fffffff:
                        step = abs(step - (1 << 32))
                    if 1 <= step <= 64:
                        return step
    return 1


def _checked_step(step: int, node: Node | None, blocks, loops, body, at, lines) -> int:
    """*step*, or 1 where the counter steps by *step* but a pass holds one source
    iteration's float work, not *step* iterations' (nvcc counts ``4 * k`` for a loop over
    k that indexes by 4k). Judged for a loop over straight-line code only."""
    if step == 1 or node is None or any(n.kind == "for" for n in _walk(node)
                                         if n is not node):
        return step
    source = sum(_float_operations(lines[n.line - 1]) for n in _walk(node)
                 if n.kind == "stmt")
    if not source:
        return step
    index = {b.index: b for b in blocks}
    inner = set().union(*[bd for _, _, bd in loops if bd < body])
    sass = sum(_weight(i) for b in body - inner for i in index[b].instructions
               if _inside(at.get(i.line), node))
    if not sass:  # integer work (an index chain): nothing to judge by
        return step
    return 1 if abs(math.log(sass / source)) < abs(math.log(sass / (step * source))) \
        else step


def _float_operations(statement: str) -> int:
    """Floating-point operations of one source statement: its right-hand side's
    arithmetic outside subscripts, a multiply feeding an add taken as one fused
    instruction."""
    rhs = re.split(r"(?<![=<>!])=(?!=)", statement, maxsplit=1)[-1]
    while "[" in rhs:
        stripped = re.sub(r"\[[^\[\]]*\]", "", rhs)
        if stripped == rhs:
            break
        rhs = stripped
    adds = len(re.findall(r"(?<=[\w)\s])\s*[-+]\s*(?=[\w(.])", rhs))
    muls = len(re.findall(r"[*/]", rhs))
    return max(adds, muls)


def _weight(insn: Instruction) -> float:
    if insn.base in _FLOAT:
        return 1.0
    return 0.0


def _memory_weight(insn: Instruction) -> float:
    return insn.width / 32 if insn.base in _MEMORY else 0.0


def _per_copy(blocks, loops, node_of, unroll, at) -> dict:
    """Per source loop: (float instructions, memory words) one iteration of its body
    makes, from its SASS loop of fewest iterations per pass."""
    index = {b.index: b for b in blocks}
    best = {}
    for (header, latch, body) in loops:
        node = node_of[(header, latch)]
        if node is None:
            continue
        u = unroll[(header, latch)]
        inner = set().union(*[bd for h, la, bd in loops if bd < body]) if any(
            bd < body for h, la, bd in loops) else set()
        f = m = 0.0
        for b in body - inner:
            for insn in index[b].instructions:
                if _inside(at.get(insn.line), node):
                    f += _weight(insn)
                    m += _memory_weight(insn)
        if id(node) not in best or u < best[id(node)][0]:
            best[id(node)] = (u, f / u, m / u)
    return best


def _inside(node: Node | None, loop: Node) -> bool:
    return node is not None and node is not loop and any(a is loop for a in node.ancestors())


def _region(block, blocks, loops, node_of, holder, unroll, per_copy, at) -> _Region:
    lines = [i.line for i in block.instructions
             if i.base not in ("BRA", "EXIT", "BSSY", "BSYNC", "NOP", "WARPSYNC")]
    lines = lines or [i.line for i in block.instructions]
    votes = Counter(lines)
    home = at.get(votes.most_common(1)[0][0]) if votes else None
    # the SASS loops around the block, and their source loops
    around = [node_of[(h, la)] for h, la, body in loops if block.index in body]
    if any(n is None for n in around) or _slow_path(block):
        # a loop of inlined library code, or the call of a slow path: not taken
        return _Region((), None, 1, 0, None, (), library=True)
    around = [n for n in around if n is not None]
    sass_loop_key = holder.get(block.index)
    inner = node_of.get(sass_loop_key) if sass_loop_key else None
    chain = []
    copy = 0
    copy_loop = None
    node = home
    if node is not None and node.kind == "stmt":
        node = node.parent
    if node is not None and node.kind in ("for", "if") and home is node and not any(
            node is a for a in around):
        node = node.parent  # the block evaluates the for's bounds or the if's condition
    path = list(reversed([node, *node.ancestors()])) if node is not None else []
    for n in path:
        if n.kind == "for" and not any(n is a for a in around):
            # the block lies in n's body but outside its SASS loops: once per entry of n,
            # or an unrolled copy of some of n's iterations
            f = sum(_weight(i) for i in block.instructions if _inside(at.get(i.line), n))
            m = sum(_memory_weight(i) for i in block.instructions
                    if _inside(at.get(i.line), n))
            u, pf, pm = per_copy.get(id(n), (0, 0.0, 0.0))
            if u and (f or m):
                copy = max(1, round(f / pf)) if pf else max(1, round(m / pm)) if pm else 1
                copy_loop = n
            break
        if n.kind == "if" and not _exclusive(block, n, at):
            continue
        if n.kind in ("for", "if"):
            chain.append(n)
    target = copy_loop or inner
    versions = ()
    if target is not None:
        versions = _versions(target, blocks, loops, node_of, unroll, per_copy, at)
    return _Region(tuple(chain), inner, unroll.get(sass_loop_key, 1) if inner else 1,
                   copy, copy_loop, versions)


def _slow_path(block) -> bool:
    """Whether the block calls a library slow path (the divisions' ``..._slowpath`` and
    ``..._div_rn_f64_full``, for operands their fast path cannot take: denormals,
    infinities, huge quotients), which typical data skip."""
    return any(i.base == "CALL" and ("slowpath" in i.operands or "_full)" in i.operands)
               for i in block.instructions)


def _exclusive(block, node: Node, at) -> bool:
    """Whether every instruction of the block but its branches lies in *node*'s body."""
    work = [i for i in block.instructions if i.base not in ("BRA", "EXIT", "BSSY", "BSYNC")]
    return bool(work) and all(_inside(at.get(i.line), node) for i in work)


def _versions(loop: Node, blocks, loops, node_of, unroll, per_copy, at) -> tuple:
    """(iterations per pass, is a loop, how many alternatives) of every version of source
    loop *loop*."""
    found = Counter()
    for (h, la, body) in loops:
        if node_of[(h, la)] is loop:
            found[(unroll[(h, la)], True)] += 1
    u, pf, pm = per_copy.get(id(loop), (0, 0.0, 0.0))
    if u:
        in_loop = set().union(*[body for h, la, body in loops]) if loops else set()
        for b in blocks:
            if b.index in in_loop and any(node_of[(h, la)] is loop or
                                          _inside(node_of[(h, la)], loop)
                                          for h, la, body in loops if b.index in body):
                continue
            f = sum(_weight(i) for i in b.instructions if _inside(at.get(i.line), loop))
            m = sum(_memory_weight(i) for i in b.instructions if _inside(at.get(i.line), loop))
            if f or m:
                copy = max(1, round(f / pf)) if pf else max(1, round(m / pm)) if pm else 1
                found[(copy, False)] += 1
    # a version present several times is one of loop-unswitched alternatives (a bound
    # with ?: makes nvcc write the loop once per branch): each runs its share
    return tuple((u, is_loop, found[(u, is_loop)])
                 for u, is_loop in sorted(found, key=lambda v: (-v[0], not v[1])))


def _passes(trips, versions, want: tuple) -> np.ndarray:
    """Passes of version *want* when the versions share *trips* iterations greedily."""
    rest = np.asarray(trips, dtype=np.int64).copy()
    for u, is_loop, alternatives in versions:
        runs = rest // u if is_loop else (rest >= u).astype(np.int64)
        if (u, is_loop) == want:
            return runs / alternatives
        rest = rest - runs * u
    return np.zeros_like(rest, dtype=float)


def _launch_env(grid_exprs, block_exprs, params):
    """Arrays of the sampled warps' lanes: bIdx_*/tIdx_* and params, with each warp's
    weight (the blocks it stands for) and which lanes are threads."""
    from pymbolic import evaluate

    grid = [int(evaluate(g, params)) for g in grid_exprs] or [1]
    block = [int(evaluate(b, params)) for b in block_exprs] or [1]
    grid = (grid + [1, 1, 1])[:3]
    block = (block + [1, 1, 1])[:3]
    axes = []
    for g in grid:
        if g <= 8:
            axes.append((np.arange(g), np.ones(g)))
        else:
            inner = np.unique(np.linspace(2, g - 3, 4).round().astype(int))
            picks = np.concatenate([[0, 1], inner, [g - 2, g - 1]])
            w = np.concatenate([[1, 1], np.full(len(inner), (g - 4) / len(inner)), [1, 1]])
            axes.append((picks, w))
    bx, by, bz = np.meshgrid(*[a[0] for a in axes], indexing="ij")
    wb = np.einsum("i,j,k->ijk", *[a[1] for a in axes]).ravel()
    threads = block[0] * block[1] * block[2]
    warps = -(-threads // 32)
    lin = np.arange(warps * 32).reshape(warps, 32)
    valid = lin < threads
    tx, ty, tz = lin % block[0], (lin // block[0]) % block[1], lin // (block[0] * block[1])
    nb = len(wb)
    env = {k: np.asarray(v) for k, v in params.items()}
    env.update({
        "bIdx_x": np.repeat(bx.ravel(), warps)[:, None],
        "bIdx_y": np.repeat(by.ravel(), warps)[:, None],
        "bIdx_z": np.repeat(bz.ravel(), warps)[:, None],
        "tIdx_x": np.tile(tx, (nb, 1)), "tIdx_y": np.tile(ty, (nb, 1)),
        "tIdx_z": np.tile(tz, (nb, 1))})
    return env, np.repeat(wb, warps), np.tile(valid, (nb, 1))


_AXIS_CAP = 256


def _executions(region: _Region, exprs, env, weights, valid) -> float:
    """Warp-level passes through a block of *region*, summed over the launch."""
    if region.library:
        return 0.0
    env = dict(env)
    mask = valid.copy()  # (warps, lanes, loop axes...)
    mult = np.ones((1, 1))
    scale = 1.0
    nodes = list(region.chain)
    last_loop = region.copy_loop if region.copy else region.loop
    if region.copy_loop is not None:
        nodes.append(region.copy_loop)
    depth = 2
    for k, node in enumerate(nodes):
        if node.kind == "if":
            try:
                mask = mask & _broadcast(exprs[id(node)][0](env), depth)
            except DataDependentError as err:
                warnings.warn(f"{err}; counted as taken", AssumedValueWarning, stacklevel=4)
            continue
        lower, upper = (_broadcast(e(env), depth) for e in exprs[id(node)])
        trips = np.maximum(upper - lower + 1, 0)
        later = set().union(*[e.names for n in nodes[k + 1:] for e in exprs[id(n)]])
        factor = None
        if node is last_loop:
            warp_trips = np.where(mask, trips, 0).max(axis=1, keepdims=True)
            want = (region.copy, False) if region.copy else (region.unroll, True)
            runs = _passes(warp_trips, region.versions, want)
            mask = mask & (warp_trips > 0)
            if node.var not in later:
                mult = mult * runs
                continue
            factor = runs / np.maximum(warp_trips, 1)
        if node.var in later:
            lo = int(np.min(np.where(mask, lower, 0), initial=0))
            hi = int(np.max(np.where(mask, upper, -1), initial=-1))
            span = max(hi - lo + 1, 0)
            step = max(1, -(-span // _AXIS_CAP))
            var = np.arange(lo, lo + span, step).reshape((1,) * depth + (-1,))
            depth += 1
            mask = _broadcast(mask, depth) & (var >= _broadcast(lower, depth)) & (
                var <= _broadcast(upper, depth))
            env = {n: _broadcast(v, depth) if np.ndim(v) >= 2 else v for n, v in env.items()}
            env[node.var] = var
            mult = _broadcast(mult, depth) * (1 if factor is None else _broadcast(factor, depth))
            scale *= step
        else:
            mult = mult * trips
    if not mask.size:
        return 0.0
    per_lane = np.where(mask, _broadcast(mult, mask.ndim), 0.0)
    per_warp = per_lane.max(axis=1)
    while per_warp.ndim > 1:
        per_warp = per_warp.sum(axis=-1)
    return float(np.sum(per_warp * weights) * scale)


def _broadcast(a, ndim):
    a = np.asarray(a)
    if a.ndim == 0:
        return a
    return a.reshape(a.shape + (1,) * (ndim - a.ndim)) if a.ndim < ndim else a

# }}}
