"""How kernelcast writes a duration, in tables and in messages alike: ``format_seconds``.

A leaf module, so that any layer (a model's warning, say) can name a time the way the
report's tables do without importing kernelcast.report, which sits above the models.

Public names: format_seconds.
"""


def format_seconds(s: float) -> str:
    """Seconds with a readable unit: 236 µs, 1.5 ms."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"
