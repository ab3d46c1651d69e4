"""Turn isl piecewise quasi-polynomials into plain Python functions.

Evaluating an isl object costs about 10 µs; a property set has dozens, so evaluation for
new parameter values compiles them once into one Python function of integer arithmetic
(floor divisions exactly as isl defines them), which evaluates all of them in a few µs.

Public names: qpolynomial_source, pwqpolynomial_source, set_source, compile_evaluator.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

import islpy as isl
from loopy.symbolic import aff_to_expr
from pymbolic.mapper.stringifier import StringifyMapper

_stringify = StringifyMapper()


def _aff_source(aff: isl.Aff) -> str:
    return _stringify(aff_to_expr(aff))


def qpolynomial_source(qp: isl.QPolynomial, divs: dict[str, str] | None = None) -> str:
    """Python source of a quasi-polynomial: exact integer arithmetic inside the floor
    divisions, one true division by the common denominator of the coefficients last (the
    value is fractional when data statistics are fractional). With *divs*, each distinct
    floor division and power becomes a local name (recorded there: source -> name),
    computed once by compile_evaluator however many terms and properties use it."""

    def shared(src: str) -> str:
        return src if divs is None else divs.setdefault(src, f"_d{len(divs)}")

    terms = []
    for term in qp.get_terms():
        coeff = Fraction(str(term.get_coefficient_val()))
        factors = []
        for dt in (isl.dim_type.param, isl.dim_type.in_):
            for i in range(term.dim(dt)):
                exp = term.get_exp(dt, i)
                if exp:
                    name = qp.space.get_dim_name(dt, i)
                    factors.append(name if exp == 1 else shared(f"{name}**{exp}"))
        for i in range(term.dim(isl.dim_type.div)):
            exp = term.get_exp(isl.dim_type.div, i)
            if exp:
                src = shared(f"({_aff_source(term.get_div(i))})")
                factors.append(src if exp == 1 else shared(f"{src}**{exp}"))
        terms.append((coeff, factors))
    if not terms:
        return "0"
    denominator = lcm(*(c.denominator for c, _ in terms))
    parts = []
    for coeff, factors in terms:
        numerator = int(coeff * denominator)
        parts.append("*".join([f"({numerator})", *factors]))
    total = _balanced_sum(parts)
    return f"({total})" if denominator == 1 else f"(({total}) / {denominator})"


def _balanced_sum(parts: list[str]) -> str:
    """``a + b + ...`` as a balanced tree of parenthesized sums: Python's compiler
    recurses once per nested operation, and a count with thousands of terms (a 3-D stencil
    folded along two axes has 4,139) exceeds its recursion limit as a flat chain. The
    terms are exact integers, so the grouping does not change the value."""
    if len(parts) <= 32:
        return " + ".join(parts)
    middle = len(parts) // 2
    return f"({_balanced_sum(parts[:middle])}) + ({_balanced_sum(parts[middle:])})"


def set_source(s: isl.Set | isl.BasicSet) -> str:
    """Python source of a condition that holds exactly on the (parameter) set *s*."""
    s = isl.Set.from_basic_set(s) if isinstance(s, isl.BasicSet) else s
    disjuncts = []
    for bset in s.compute_divs().get_basic_sets():
        conjuncts = []
        for cns in bset.get_constraints():
            op = "==" if cns.is_equality() else ">="
            conjuncts.append(f"({_aff_source(cns.get_aff())}) {op} 0")
        disjuncts.append(" and ".join(conjuncts) if conjuncts else "True")
    if not disjuncts:
        return "False"
    return " or ".join(f"({d})" for d in disjuncts)


def pwqpolynomial_source(pwqp: isl.PwQPolynomial, divs: dict[str, str] | None = None) -> str:
    """Python source of a piecewise quasi-polynomial; zero outside its pieces, as in isl.
    *divs* as for qpolynomial_source."""
    result = "0"
    for piece_set, qp in reversed(pwqp.get_pieces()):
        value = qpolynomial_source(qp, divs)
        cond = set_source(piece_set)
        result = value if cond == "(True)" and result == "0" else (
            f"({value} if {cond} else {result})")
    return result


def compile_evaluator(param_names, sources, name="evaluate", divs=None):
    """Compile ``f(*params) -> tuple`` returning the value of each source expression;
    *divs* (source -> local name) are computed first."""
    args = ", ".join(param_names)
    body = ",\n        ".join(sources)
    locals_ = "".join(f"    {local} = {src}\n" for src, local in (divs or {}).items())
    code = f"def {name}({args}):\n{locals_}    return (\n        {body},\n    )\n"
    namespace: dict = {}
    exec(compile(code, f"<kernelcast {name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.source = code
    return fn
