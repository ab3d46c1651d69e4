"""The OpenCL built-ins the front-end knows: work-item functions, math functions and
predefined constants.

A math function's kind says how its argument and result types follow from the
arguments: ``float`` (any integer argument is converted to float; the result is the
widest floating type), ``generic`` (C's usual conversions over all arguments), ``abs``
(integers give the unsigned type of the same width), ``float_int`` (a floating first
argument and an integer second one) and ``int`` (integers only).

Public names: WORK_ITEM, MATH, CONSTANTS, CONVERSIONS, conversion_type.
"""

from __future__ import annotations

WORK_ITEM = ("get_global_id", "get_local_id", "get_group_id", "get_global_size",
             "get_local_size", "get_num_groups", "get_global_offset", "get_work_dim")

_FLOAT_1 = ("sqrt rsqrt cbrt exp exp2 exp10 expm1 log log2 log10 log1p sin cos tan asin acos "
            "atan sinh cosh tanh asinh acosh atanh sinpi cospi tanpi asinpi acospi atanpi fabs "
            "floor ceil round trunc rint erf erfc tgamma lgamma logb sign degrees radians").split()
_NATIVE = "sqrt rsqrt exp exp2 exp10 log log2 log10 sin cos tan recip".split()
_FLOAT_2 = ("pow powr fmin fmax fmod atan2 atan2pi hypot copysign fdim step remainder maxmag "
            "minmag nextafter").split()

# name -> (number of arguments, kind)
MATH: dict[str, tuple[int, str]] = {}
MATH.update({n: (1, "float") for n in _FLOAT_1})
MATH.update({f"{p}_{n}": (1, "float") for p in ("native", "half") for n in _NATIVE})
MATH.update({n: (2, "float") for n in _FLOAT_2})
MATH.update({f"{p}_{n}": (2, "float") for p in ("native", "half") for n in ("divide", "powr")})
MATH.update({n: (3, "float") for n in ("fma", "mad", "mix", "smoothstep")})
MATH.update({n: (2, "float_int") for n in ("pown", "rootn", "ldexp")})
MATH.update({"min": (2, "generic"), "max": (2, "generic"), "clamp": (3, "generic"),
             "abs": (1, "abs")})
MATH.update({n: (1, "int") for n in ("popcount", "clz")})
MATH.update({n: (2, "int") for n in ("mul24", "rotate", "mul_hi", "hadd", "rhadd", "add_sat",
                                     "sub_sat")})
MATH.update({n: (3, "int") for n in ("mad24", "mad_hi")})

# name -> (normalized type, value)
CONSTANTS = {
    "CLK_LOCAL_MEM_FENCE": ("int", 1), "CLK_GLOBAL_MEM_FENCE": ("int", 2),
    "M_PI": ("double", 3.141592653589793), "M_PI_F": ("float", 3.1415927410125732),
    "M_E": ("double", 2.718281828459045), "M_E_F": ("float", 2.7182817459106445),
    "MAXFLOAT": ("float", 3.4028234663852886e38), "FLT_MAX": ("float", 3.4028234663852886e38),
    "FLT_MIN": ("float", 1.1754943508222875e-38), "FLT_EPSILON": ("float", 1.1920928955078125e-07),
    "INT_MAX": ("int", 2**31 - 1), "INT_MIN": ("int", -2**31), "UINT_MAX": ("uint", 2**32 - 1),
    "INFINITY": ("float", float("inf")), "HUGE_VALF": ("float", float("inf")),
    "HUGE_VAL": ("double", float("inf")), "NAN": ("float", float("nan")),
    "DBL_MAX": ("double", 1.7976931348623157e308), "DBL_MIN": ("double", 2.2250738585072014e-308),
    "DBL_EPSILON": ("double", 2.220446049250313e-16), "CHAR_BIT": ("int", 8),
    "UCHAR_MAX": ("int", 255), "SHRT_MAX": ("int", 2**15 - 1), "LONG_MAX": ("long", 2**63 - 1),
    "M_SQRT2": ("double", 1.4142135623730951), "M_SQRT2_F": ("float", 1.4142135381698608),
    "M_LN2": ("double", 0.6931471805599453), "M_LN2_F": ("float", 0.6931471824645996),
    "M_1_PI": ("double", 0.3183098861837907), "M_1_PI_F": ("float", 0.31830987334251404),
}

#: convert_TYPE, with the optional rounding (_rte, _rtz, _rtp, _rtn) and _sat suffixes
#: OpenCL C allows: a conversion, counted as a cast is
CONVERSIONS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
               "double")


def conversion_type(name: str) -> str | None:
    """The C type *name* (``convert_int_sat_rte``) converts to, or None."""
    if not name.startswith("convert_"):
        return None
    parts = name[len("convert_"):].split("_")
    if parts[0] not in CONVERSIONS or any(p not in ("sat", "rte", "rtz", "rtp", "rtn")
                                          for p in parts[1:]) or len(parts) > 3:
        return None
    return parts[0]
