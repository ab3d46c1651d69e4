"""Seeded random edits of source text for the front-ends' fuzz tests (skeletons, OpenCL C):
token-level (delete, duplicate, swap, insert a word, replace by another token) and
character-level (delete, duplicate a run, swap, insert a character, truncate).

Public names: edit_tokens, edit_characters, mutated.
"""

from __future__ import annotations

import random


def edit_tokens(toks: list[str], rng: random.Random, words) -> None:
    """One random edit of the token list *toks*, in place (*words*: what may be
    inserted)."""
    i = rng.randrange(len(toks))
    op = rng.randrange(5)
    if op == 0:
        del toks[i]
    elif op == 1:
        toks.insert(i, toks[i])
    elif op == 2:
        j = rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    elif op == 3:
        toks.insert(i, " " + rng.choice(words) + " ")
    else:
        toks[i] = rng.choice(toks)


def edit_characters(text: str, rng: random.Random, alphabet: str) -> str:
    """*text* with one random character-level edit (*alphabet*: what may be inserted)."""
    n = len(text)
    i = rng.randrange(n + 1)
    op = rng.randrange(5)
    if op == 0 and n:
        return text[:i] + text[i + rng.randint(1, 8):]
    if op == 1:
        j = min(n, i + rng.randint(1, 40))
        return text[:j] + text[i:j] + text[j:]
    if op == 2 and n > 1:
        j = rng.randrange(n)
        a, b = sorted((i % n, j))
        return text[:a] + text[b] + text[a + 1:b] + text[a] + text[b + 1:]
    if op == 3:
        return text[:i] + rng.choice(alphabet) + text[i:]
    return text[:i]


def mutated(text: str, rng: random.Random, token, words, alphabet: str) -> str:
    """*text* with one to three random edits, each of its tokens (*token*: the regular
    expression that splits it) or of its characters."""
    for _ in range(rng.randrange(1, 4)):
        if rng.random() < 0.5:
            toks = token.findall(text) or [""]
            edit_tokens(toks, rng, words)
            text = "".join(toks)
        else:
            text = edit_characters(text, rng, alphabet)
    return text
