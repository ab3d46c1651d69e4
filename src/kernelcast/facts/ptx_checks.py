"""Static checks of a microbenchmark's compiled forms, the paper's Figure 2 (b) and (c)
(shared/seeds 003, §III-A): the PTX that nvcc emits and the SASS that nvdisasm (or
``cuobjdump -sass``) prints must still show what the source was written for. A
microbenchmark (kernelcast.suites.criteria_microbenchmarks.Microbenchmark, or anything
with its fields) names its kernel, its target instructions and their companions, and
how many targets a thread executes.

``check_ptx(bench, ptx)`` and ``check_sass(bench, sass)`` return the problems found, one
sentence each, empty when the kernel passes:

- the kernel is in the text;
- there is a timed region: at least two clock reads (PTX ``mov.u64 %rd, %clock64`` or
  ``%clock``; SASS ``CS2R``/``S2R``/``S2UR`` of ``SR_CLOCKLO``/``SR_CLOCKHI``). The region
  runs from the last clock read before the final group of reads to that group, where reads
  with no target instruction between them are one group (a 64-bit read may be split in a
  LO and a HI read; the seed's ``clock()`` joins the start read);
- a dynamic input precedes the region (a clock read before the start read, or a thread
  index read: ``%tid`` / ``SR_TID``), so the inputs were not constant-folded;
- the region holds at least ``ops_per_thread`` target instructions (PTX: lines whose
  opcode is ``ptx_target``; SASS: opcodes matching ``sass_targets``) -- no design here
  lets fewer SASS instructions realize them. A benchmark whose ``count`` is
  ``"branches"`` (divergence) counts only targets under a predicate guard (``@%p bra``,
  ``@!P0 BRA``): conditional branches, which if-conversion to predication would remove;
- no backward branch sits in the region (a rolled loop defeats P1; the design has none);
- selectivity (P3): other instructions in the region, besides targets, their documented
  companions (``ptx_companions``, ``sass_companions``), clock reads, NOPs and branches,
  are at most MAX_OTHER_FRACTION of the target count (for every kind: in a latency chain
  an interposed instruction adds latency too).

A SASS opcode matches a target or companion name when it equals it or extends it with
modifiers (``ISETP`` matches ``ISETP.LT.U32.AND``); ``IMAD.MOV`` (a register move) matches
no target.

Public names: MAX_OTHER_FRACTION, Instruction, check_ptx, check_sass, ptx_functions,
sass_functions, parse_ptx, parse_sass.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

MAX_OTHER_FRACTION = 0.05


@dataclass(frozen=True)
class Instruction:
    """One instruction: opcode with modifiers, operand text, address (SASS) or None, and
    its predicate guard (``@%p1``, ``@!P0``; empty when it has none)."""

    opcode: str
    operands: str
    address: int | None = None
    guard: str = ""


# ---------------------------------------------------------------- PTX

_PTX_HEADER = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*\(")
_PTX_LABEL = re.compile(r"^([A-Za-z_$%][\w$]*):")


def ptx_functions(text: str) -> dict[str, str]:
    """Each .entry / .func of a PTX module: name -> body (the text inside its braces)."""
    out = {}
    for m in _PTX_HEADER.finditer(text):
        close = text.find(")", m.end())
        brace, semi = text.find("{", close), text.find(";", close)
        if close < 0 or brace < 0 or 0 <= semi < brace:
            continue  # a declaration (prototype), not a definition
        start = brace
        depth, i = 0, start
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        out[m.group(1)] = text[start + 1:i]
    return out


def parse_ptx(body: str) -> tuple[list[Instruction], dict[str, int]]:
    """The instructions of a PTX function body and its labels (name -> index of the
    instruction that follows). Comments, directives and braces are skipped."""
    insns, labels = [], {}
    for line in body.splitlines():
        line = line.split("//")[0].strip()
        while (m := _PTX_LABEL.match(line)):
            labels[m.group(1)] = len(insns)
            line = line[m.end():].strip()
        for stmt in line.split(";"):
            stmt = stmt.strip().strip("{}").strip()
            if not stmt or stmt.startswith("."):
                continue
            guard = ""
            if stmt.startswith("@"):  # predicate guard
                guard, stmt = stmt.split(None, 1) if " " in stmt else (stmt, "")
            parts = stmt.split(None, 1)
            if parts:
                insns.append(Instruction(parts[0], parts[1] if len(parts) > 1 else "",
                                         guard=guard))
    return insns, labels


def _ptx_is_clock(i: Instruction) -> bool:
    return (i.opcode.startswith("mov")
            and re.search(r"%clock(64|_hi)?\b", i.operands) is not None)


def _ptx_is_tid(i: Instruction) -> bool:
    return "%tid." in i.operands


def _ptx_branch_target(i: Instruction, index: int, labels: dict[str, int]) -> int | None:
    if not i.opcode.startswith("bra"):
        return None
    return labels.get(i.operands.strip().rstrip(";").strip())


def _function(funcs: dict, bench, what: str):
    """The body of *bench*'s kernel among *funcs*, or the one problem that it is missing."""
    if bench.kernel_name not in funcs:
        return [f"kernel {bench.kernel_name} is not in the {what} "
                f"(functions: {', '.join(sorted(funcs)) or 'none'})"]
    return funcs[bench.kernel_name]


def check_ptx(bench, ptx: str) -> list[str]:
    """The problems of *bench*'s kernel in the PTX text *ptx* (empty: it passes)."""
    body = _function(ptx_functions(ptx), bench, "PTX")
    if isinstance(body, list):
        return body
    insns, labels = parse_ptx(body)
    return _check(bench, insns, "PTX",
                  is_target=lambda i: i.opcode == bench.ptx_target and _counted(bench, i),
                  is_companion=lambda i: i.opcode in bench.ptx_companions,
                  is_clock=_ptx_is_clock, is_tid=_ptx_is_tid, is_nop=lambda i: False,
                  target_at=lambda i, k: _ptx_branch_target(i, k, labels),
                  target_names=_names(bench, bench.ptx_target))


# ---------------------------------------------------------------- SASS

_SASS_LINE = re.compile(r"/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;")
_SASS_LABEL = re.compile(r"^\s*(\.?[A-Za-z_$][\w.$]*):\s*$")
_NVDISASM_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_CUOBJDUMP_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")


def sass_functions(text: str) -> dict[str, str]:
    """Each function of nvdisasm's text (``.section .text.NAME``) or of ``cuobjdump -sass``
    (``Function : NAME``): name -> its lines up to the next function or section."""
    out, name, lines = {}, None, []
    for line in text.splitlines():
        m = _NVDISASM_SECTION.match(line) or _CUOBJDUMP_FUNCTION.match(line)
        if m or line.lstrip().startswith(".section"):
            if name is not None:
                out[name] = "\n".join(lines)
            name, lines = (m.group(1) if m else None), []
            continue
        if name is not None:
            lines.append(line)
    if name is not None:
        out[name] = "\n".join(lines)
    return out


def parse_sass(body: str) -> tuple[list[Instruction], dict[str, int]]:
    """The instructions of a SASS function (``/*0040*/  IADD3 R1, R1, R2, RZ ;``,
    predicates such as ``@!P0`` dropped) and its labels (name -> instruction index)."""
    insns, labels = [], {}
    for line in body.splitlines():
        if (m := _SASS_LABEL.match(line)):
            labels[m.group(1)] = len(insns)
            continue
        m = _SASS_LINE.search(line)
        if not m:
            continue
        text = m.group(2).strip().lstrip("{").strip()
        guard = ""
        if text.startswith("@"):
            guard, text = text.split(None, 1) if " " in text else (text, "")
        parts = text.split(None, 1)
        if parts:
            insns.append(Instruction(parts[0], parts[1] if len(parts) > 1 else "",
                                     int(m.group(1), 16), guard))
    return insns, labels


def _matches(opcode: str, names) -> bool:
    return any(opcode == n or opcode.startswith(n + ".") for n in names)


def _sass_is_clock(i: Instruction) -> bool:
    return (_matches(i.opcode, ("CS2R", "S2R", "S2UR"))
            and re.search(r"\bSR_CLOCK(LO|HI)\b", i.operands) is not None)


def _sass_is_tid(i: Instruction) -> bool:
    return re.search(r"\bSR_TID\b", i.operands) is not None


def _sass_branch_target(i: Instruction, insns: list[Instruction],
                        labels: dict[str, int]) -> int | None:
    """The index a BRA jumps to: a label (nvdisasm: ``BRA `(.L_x_0)``) or an address
    (cuobjdump: ``BRA 0x1b0``)."""
    if not _matches(i.opcode, ("BRA",)):
        return None
    if (m := re.search(r"`?\(\s*([^)\s]+)\s*\)", i.operands)) and m.group(1) in labels:
        return labels[m.group(1)]
    if (m := re.search(r"0x([0-9a-fA-F]+)", i.operands)):
        address = int(m.group(1), 16)
        return next((k for k, x in enumerate(insns) if x.address == address), None)
    return None


def check_sass(bench, sass: str) -> list[str]:
    """The problems of *bench*'s kernel in the SASS text *sass* (empty: it passes)."""
    body = _function(sass_functions(sass), bench, "SASS")
    if isinstance(body, list):
        return body
    insns, labels = parse_sass(body)

    def is_target(i):
        return (not i.opcode.startswith("IMAD.MOV") and _matches(i.opcode, bench.sass_targets)
                and _counted(bench, i))

    return _check(bench, insns, "SASS", is_target=is_target,
                  is_companion=lambda i: _matches(i.opcode, bench.sass_companions),
                  is_clock=_sass_is_clock, is_tid=_sass_is_tid,
                  is_nop=lambda i: i.opcode == "NOP",
                  target_at=lambda i, k: _sass_branch_target(i, insns, labels),
                  target_names=_names(bench, "/".join(bench.sass_targets)))


# ---------------------------------------------------------------- shared


def _counted(bench, i: Instruction) -> bool:
    """Whether a target instruction counts: always, or (count "branches") when a predicate
    other than the always-true PT guards it."""
    return bench.count != "branches" or i.guard not in ("", "@PT")


def _names(bench, names: str) -> str:
    return f"conditional {names}" if bench.count == "branches" else names


def _check(bench, insns, level, *, is_target, is_companion, is_clock, is_tid, is_nop,
           target_at, target_names) -> list[str]:
    """The checks common to PTX and SASS, on one function's instructions; *target_at*
    gives the index a branch jumps to (None: not a branch, or an unknown target)."""
    clocks = [k for k, i in enumerate(insns) if is_clock(i)]
    if len(clocks) < 2:
        return [f"{level}: {len(clocks)} clock read(s) in {bench.kernel_name}; the timed "
                "region needs one before and one after (the clock read is missing)"]
    g = len(clocks) - 1  # first read of the final group
    while g > 0 and not any(is_target(i) for i in insns[clocks[g - 1] + 1:clocks[g]]):
        g -= 1
    start, end = (clocks[g - 1], clocks[g]) if g > 0 else (clocks[0], clocks[-1])
    region = range(start + 1, end)
    problems = []
    if not (clocks[0] < start or any(is_tid(i) for i in insns[:end])):
        problems.append(f"{level}: no dynamic input: neither a clock read nor a thread "
                        "index read precedes the timed region, so the inputs may have "
                        "been constant-folded")
    count = sum(is_target(insns[k]) for k in region)
    if count < bench.ops_per_thread:
        problems.append(f"{level}: only {count} {target_names} in the timed region, fewer "
                        f"than the {bench.ops_per_thread} the benchmark executes (folded, "
                        "eliminated or moved out of the region, or a clock read is missing)")
    branches = {k: target_at(insns[k], k) for k in region}
    backward = [k for k, t in branches.items() if t is not None and t <= k]
    if backward:
        k = backward[0]
        where = (f"/*{insns[k].address:04x}*/" if insns[k].address is not None
                 else f"instruction {k}")
        problems.append(f"{level}: backward branch at {where} inside the timed region: "
                        "a loop, not a straight-line sequence (P1)")
    other = Counter(insns[k].opcode for k in region
                    if not (is_target(insns[k]) or is_companion(insns[k])
                            or is_clock(insns[k]) or is_nop(insns[k])
                            or branches[k] is not None))
    n_other = sum(other.values())
    if count and n_other > MAX_OTHER_FRACTION * count:
        top = ", ".join(f"{op} x{n}" for op, n in other.most_common(3))
        problems.append(f"{level}: {n_other} other instructions in the timed region, more "
                        f"than {MAX_OTHER_FRACTION:.0%} of the {count} targets (P3 "
                        f"selectivity; most: {top})")
    return problems
