"""Turn isl piecewise quasi-polynomials into plain Python functions.

Evaluating an isl object costs about 10 µs; a property set has dozens, so evaluation for
new parameter values compiles them once into one Python function of integer arithmetic
(floor divisions exactly as isl defines them), which evaluates all of them in a few µs.
The source is the nested form isl prints for C where the arguments are exact (ints,
Fractions), else the sum of the terms (qpolynomial_source); a LazyEvaluator compiles it
only when evaluated a second time, asking isl for the values the first time.

Public names: qpolynomial_source, pwqpolynomial_source, set_source, evaluator_source,
compile_source, compile_evaluator, LazyEvaluator.
"""

from __future__ import annotations

import re
import weakref
from math import lcm

import islpy as isl
from loopy.symbolic import aff_to_expr
from pymbolic.mapper.stringifier import StringifyMapper

_stringify = StringifyMapper()


_AFF_SOURCES: dict[str, str] = {}


def _aff_source(aff: isl.Aff) -> str:
    """The source of *aff*, remembered by its isl string (which names its dimensions and
    spells out every coefficient and nested floor division, so equal strings are equal
    affine expressions): the same floor divisions recur in many counts and variants."""
    key = str(aff)
    src = _AFF_SOURCES.get(key)
    if src is None:
        if len(_AFF_SOURCES) >= 100_000:
            _AFF_SOURCES.clear()
        src = _AFF_SOURCES[key] = _stringify(aff_to_expr(aff))
    return src


def _rational(val: isl.Val) -> tuple[int, int]:
    """(numerator, denominator) of a rational isl value (isl keeps them reduced, with a
    positive denominator)."""
    text = val.to_str()
    num, _, den = text.partition("/")
    return int(num), int(den) if den else 1


def qpolynomial_source(qp: isl.QPolynomial, divs: dict[str, str] | None = None, *,
                       exact_args: bool = False) -> str:
    """Python source of a quasi-polynomial: exact integer arithmetic inside the floor
    divisions, one true division by the common denominator of the coefficients last (the
    value is fractional when data statistics are fractional). With *divs*, each distinct
    floor division (and power) becomes a local name (recorded there: source -> name),
    computed once by compile_evaluator however many terms and properties use it.

    With *exact_args* (the evaluator will take ints and Fractions only, never a float),
    the source is the nested form that isl prints for C: the polynomial times the common
    denominator of its coefficients, with integer coefficients, over that denominator.
    Integer arithmetic gives the same exact value as the sum of the terms, so the same
    correctly rounded float, and isl prints it about five times as fast as its terms can
    be asked for one by one (a large count has ten thousand terms), into a source that
    compiles three times as fast. Floats would round differently in the two forms, so
    they get the sum of the terms, as they always did."""
    if exact_args:
        src = _nested_source(qp, divs)
        if src is not None:
            return src
    return _render(_template(qp), divs)


# an innermost floor division as isl's C printer writes it: floord(numerator, denominator)
_FLOORD = re.compile(r"floord\(([^(),]*), ([0-9]+)\)")
# what else that printer writes for a quasi-polynomial: integers, names, + - * / ( )
_NESTED = re.compile(r"[A-Za-z0-9_ +\-*/()\x01\x02]*")


def _nested_source(qp: isl.QPolynomial, divs: dict[str, str] | None) -> str | None:
    """The source of *qp* in the nested form isl prints for C, or None where that form
    holds something other than integer arithmetic and floord (then the caller falls back
    to the terms)."""
    text = isl.Printer.to_str(qp.get_ctx()).set_output_format(
        isl.format.C).print_qpolynomial(qp).get_str()
    # Each floord becomes "((numerator) // denominator)", innermost first; with *divs*
    # a local name, else a placeholder (without parentheses or commas, so that the
    # floord around it still matches) expanded at the end. A large count writes a few
    # distinct floords a hundred thousand times: each is replaced throughout at once.
    local: dict[str, str] = {} if divs is None else divs
    while "floord(" in text:
        match = _FLOORD.search(text)
        if match is None:
            return None
        src = f"(({match.group(1)}) // {match.group(2)})"
        name = local.setdefault(src, f"_d{len(local)}" if divs is not None
                                else f"\x01{len(local)}\x02")
        text = text.replace(match.group(0), name)
    if "infty" in text or "NaN" in text or not _NESTED.fullmatch(text):
        return None
    if divs is None:
        sources = {v: k for k, v in local.items()}
        while "\x01" in text:
            text = re.sub("\x01[0-9]+\x02", lambda m: sources[m.group(0)], text)
    return f"({text})"


def _template(qp: isl.QPolynomial) -> tuple:
    """What qpolynomial_source needs of *qp*: ``(factors, body)``. The distinct factors
    of its terms are listed by first use, each as ``(name, exp)`` for a parameter or
    ``(source, exp, i)`` for the i-th floor division; *body* is the source with the k-th
    factor's name left as the replacement field ``{k}``."""
    terms = qp.get_terms()
    if not terms:
        return (), "0"
    # every term of a quasi-polynomial shares the polynomial's space and its list of
    # floor divisions (isl's foreach_term hands each term the polynomial's own div
    # matrix), so each name and floor division is looked up once, not once per term
    space = qp.space
    variables = [(dt, i, space.get_dim_name(dt, i))
                 for dt in (isl.dim_type.param, isl.dim_type.in_)
                 for i in range(space.dim(dt))]
    div = isl.dim_type.div
    n_div = terms[0].dim(div)
    factors: dict[tuple, int] = {}  # (name or div position, exp) -> position, by first use
    div_sources: dict[int, str] = {}
    coeffs = []
    term_factors = []
    for term in terms:
        coeffs.append(_rational(term.get_coefficient_val()))
        mine = []
        get_exp = term.get_exp
        for dt, i, name in variables:
            exp = get_exp(dt, i)
            if exp:
                mine.append(factors.setdefault((name, exp), len(factors)))
        for i in range(n_div):
            exp = get_exp(div, i)
            if exp:
                if i not in div_sources:
                    div_sources[i] = f"({_aff_source(term.get_div(i))})"
                mine.append(factors.setdefault((i, exp), len(factors)))
        term_factors.append(tuple(mine))
    denominator = lcm(*(den for _num, den in coeffs))
    listed = tuple((var, exp) if var.__class__ is str else (div_sources[var], exp, var)
                   for var, exp in factors)
    # the sum with a replacement field for each factor (the source holds no braces)
    parts = ["*".join([f"({num * (denominator // den)})", *[f"{{{k}}}" for k in mine]])
             for (num, den), mine in zip(coeffs, term_factors, strict=True)]
    total = _balanced_sum(parts)
    body = f"({total})" if denominator == 1 else f"(({total}) / {denominator})"
    return listed, body


def _render(template: tuple, divs: dict[str, str] | None) -> str:
    listed, body = template

    def shared(src: str) -> str:
        return src if divs is None else divs.setdefault(src, f"_d{len(divs)}")

    # The names are taken as the terms first use them, a floor division's before its
    # power's; later uses of a name take no new one.
    div_names: dict[int, str] = {}
    names = []
    for factor in listed:
        if len(factor) == 2:
            var, exp = factor
            names.append(var if exp == 1 else shared(f"{var}**{exp}"))
            continue
        src, exp, i = factor
        name = div_names.get(i)
        if name is None:
            name = div_names[i] = shared(src)
        names.append(name if exp == 1 else shared(f"{name}**{exp}"))
    return body.format(*names)


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


def pwqpolynomial_source(pwqp: isl.PwQPolynomial, divs: dict[str, str] | None = None, *,
                         exact_args: bool = False) -> str:
    """Python source of a piecewise quasi-polynomial; zero outside its pieces, as in isl.
    *divs* and *exact_args* as for qpolynomial_source."""
    result = "0"
    for piece_set, qp in reversed(pwqp.get_pieces()):
        value = qpolynomial_source(qp, divs, exact_args=exact_args)
        cond = set_source(piece_set)
        result = value if cond == "(True)" and result == "0" else (
            f"({value} if {cond} else {result})")
    return result


def evaluator_source(param_names, sources, name="evaluate", divs=None) -> str:
    """The source of ``name(*params) -> tuple`` returning the value of each source
    expression; *divs* (source -> local name) are computed first."""
    args = ", ".join(param_names)
    body = ",\n        ".join(sources)
    locals_ = "".join(f"    {local} = {src}\n" for src, local in (divs or {}).items())
    return f"def {name}({args}):\n{locals_}    return (\n        {body},\n    )\n"


def compile_source(code: str, name: str):
    """The function *name* that *code* (from evaluator_source) defines, with its source
    as ``.source``."""
    namespace: dict = {}
    exec(compile(code, f"<kernelcast {name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[name]
    fn.source = code
    return fn


def compile_evaluator(param_names, sources, name="evaluate", divs=None):
    """Compile ``f(*params) -> tuple`` returning the value of each source expression;
    *divs* (source -> local name) are computed first."""
    return compile_source(evaluator_source(param_names, sources, name, divs), name)


class LazyEvaluator:
    """An evaluator made from its source when first needed.

    Python takes milliseconds to compile the evaluator of a large count (as long as
    extracting it), and Properties are often evaluated once (ranking variants) or not at
    all in the process that extracted them (kernelcast.properties.cache). So, given the
    isl *forms* whose values the source computes (``forms[k]`` the k-th value) and the
    *arg_names* of its parameters, the first call with integer arguments asks isl for the
    values (a fraction of a millisecond a count): exact, as the source computes them, so
    that every value converts to the same float (an int where exact, else the correctly
    rounded quotient). Any other call compiles the source; from then on the attribute
    *attr* of *owner* (if given) is the compiled function itself, as compile_evaluator
    returns it. ``source`` is its source."""

    __slots__ = ("_arg_names", "_attr", "_fn", "_forms", "_owner", "name", "source")

    def __init__(self, source: str, name: str, *, forms=None, arg_names=(), owner=None,
                 attr: str | None = None):
        self.source = source
        self.name = name
        self._fn = None
        self._forms = forms
        self._arg_names = tuple(arg_names)
        self._owner = None if owner is None else weakref.ref(owner)
        self._attr = attr

    def for_owner(self, owner, attr: str) -> LazyEvaluator:
        """This evaluator, not yet compiled, for another *owner*."""
        return LazyEvaluator(self.source, self.name, forms=self._forms,
                             arg_names=self._arg_names, owner=owner, attr=attr)

    def __call__(self, *args):
        fn = self._fn
        if fn is not None:
            return fn(*args)
        forms, self._forms = self._forms, None  # isl answers once; then compile
        if forms is not None:
            values = _isl_values(forms, self._arg_names, args)
            if values is not None:
                return values
        fn = self._fn = compile_source(self.source, self.name)
        owner = None if self._owner is None else self._owner()
        if owner is not None:
            setattr(owner, self._attr, fn)
        return fn(*args)


def _isl_values(forms, arg_names, args) -> tuple | None:
    """The values of the isl piecewise quasi-polynomials *forms* at integer *args*, as
    the evaluator that pwqpolynomial_source and evaluator_source write computes them;
    None where isl cannot tell (arguments that are not ints of a C long, a parameter
    not among *arg_names*)."""
    if len(args) != len(arg_names) or any(type(a) is not int or not -2**62 < a < 2**62
                                          for a in args):
        return None  # isl takes a parameter's value as a C long
    given = dict(zip(arg_names, args, strict=True))
    param = isl.dim_type.param
    points: dict[str, isl.Point] = {}  # by the parameters' names, in order
    values = []
    for form in forms:
        space = form.space
        names = [space.get_dim_name(param, i) for i in range(space.dim(param))]
        key = ",".join(names)
        point = points.get(key)
        if point is None:
            if not all(n in given for n in names):
                return None
            point = isl.Point.zero(space.params())
            for i, n in enumerate(names):
                point = point.set_coordinate_val(param, i, given[n])
            points[key] = point
        num, _, den = form.eval(point).to_str().partition("/")
        values.append(int(num) if not den else int(num) / int(den))
    return tuple(values)
