"""Fuzzing the skeleton parser: seeded random mutations of the paper's skeletons
(character and token deletions, duplications, swaps, random characters, truncations)
must either parse or raise SkeletonError with a position inside the text — never any
other exception. MIN_CASES must run within TIME_LIMIT_S."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

from kernelcast.frontends.skeleton import SkeletonError, parse_skeleton
from tests.mutations import edit_characters, edit_tokens

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "skeletons"
MIN_CASES = 10_000
TIME_LIMIT_S = 60.0
TOKEN = re.compile(r"\s+|/\*.*?\*/|//[^\n]*|[A-Za-z_]\w*|\d+|\"[^\"\n]*\"|#define|.", re.S)
ALPHABET = ("[](){}<>:;,=+-*/#\"'\n\t 0123456789abcijknrxyzABCIJMNT_"
            "\x00\u00e9\u2014\U0001f600")
WORDS = ["ld", "st", "comp", "for", "stream", "parallel_for", "hint", "hints", "#define",
         "float", "int", "double", "sample", "(hint:14)", "/*", "*/", "//", "0:4", "9" * 40,
         "9" * 5000, "N*N*N*N",
         "begin", "M[i][n]", "[", "]", "{", "}", "-", "/0", "*i"]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.5:  # token level
            toks = TOKEN.findall(text) or [""]
            edit_tokens(toks, rng, WORDS)
            text = "".join(toks)
        else:  # character level
            text = edit_characters(text, rng, ALPHABET)
    return text


def test_fuzz_only_skeleton_errors():
    sources = [p.read_text() for p in sorted(EXAMPLES.glob("*.sk"))]
    assert len(sources) == 7
    rng = random.Random(20261126)
    start = time.perf_counter()
    cases = parsed = 0
    while time.perf_counter() - start < TIME_LIMIT_S and cases < MIN_CASES:
        text = mutate(rng.choice(sources), rng)
        cases += 1
        try:
            parse_skeleton(text, path="fuzz.sk")
            parsed += 1
        except SkeletonError as e:
            assert e.path == "fuzz.sk" and e.message, text
            assert "\n" not in e.message and len(e.message) <= 400, (str(e)[:500], text)
            lines = text.split("\n")
            assert 1 <= e.line <= len(lines), (str(e), text)
            assert 1 <= e.column <= len(lines[e.line - 1]) + 1, (str(e), text)
        except Exception as e:  # noqa: BLE001 -- any other exception is the finding
            raise AssertionError(f"{type(e).__name__}: {e}\n--- input ---\n{text}") from e
    elapsed = time.perf_counter() - start
    print(f"skeleton fuzz: {cases} cases ({parsed} parsed) in {elapsed:.1f} s")
    assert cases >= MIN_CASES, f"only {cases} cases in {elapsed:.1f} s"
    assert 0 < parsed < cases
