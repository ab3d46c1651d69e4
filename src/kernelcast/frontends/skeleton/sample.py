"""Reading the sample data file an index array names with ``hints<sample="file">``.

Format (inferred; the paper shows only the hint): whitespace-separated non-negative
integers, the array's elements in row-major order (one row of the last dimension per line
is customary), ``#`` starts a comment to the end of the line. The count must equal the
array's size.

Public names: sample_path, read_sample.
"""

from __future__ import annotations

from pathlib import Path

from kernelcast.frontends.files import check_regular_file

from .errors import SkeletonError
from .ir import INT_MAX, Skeleton


def sample_path(skeleton: Skeleton, array: str) -> Path | None:
    """The sample file of ``array``, relative paths taken from the skeleton's folder."""
    sample = skeleton.array(array).sample
    if sample is None:
        return None
    base = Path(skeleton.path).parent if not skeleton.path.startswith("<") else Path()
    return base / sample


def read_sample(skeleton: Skeleton, array: str) -> tuple[int, ...]:
    """The values of ``array``'s sample file in row-major order."""
    path = sample_path(skeleton, array)
    if path is None:
        a = skeleton.array(array)
        raise SkeletonError(skeleton.path, a.line, a.column, f"array '{array}' has no sample hint")
    check_regular_file(path, "sample file")  # a FIFO would block the read
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkeletonError(str(path), None, None, f"cannot read the sample of '{array}': "
                                                   f"{getattr(exc, 'strerror', None) or exc}") from None
    values = []
    for lineno, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0]
        column = 0
        for word in body.split():
            column = body.index(word, column)
            digits = word.lstrip("0") or "0"
            if not (word.isascii() and word.isdigit()):
                raise SkeletonError(str(path), lineno, column + 1,
                                    f"expected a non-negative integer, got {word[:40]!r}")
            if len(digits) > len(str(INT_MAX)) or int(digits) > INT_MAX:
                raise SkeletonError(str(path), lineno, column + 1,
                                    f"value of {len(digits)} digits is too large: sample "
                                    f"values are 64-bit indices, at most {INT_MAX}")
            values.append(int(digits))
            column += len(word)
    size = skeleton.array(array).size
    if len(values) != size:
        raise SkeletonError(str(path), None, None, f"the sample of '{array}' holds "
                                                   f"{len(values)} values, expected {size}")
    return tuple(values)
