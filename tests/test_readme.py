"""The README: its Python examples run as written, it starts with the two commands, its
links stay inside the repository, and every command and flag it shows is one the
parser takes (docs/cli.md's flags too)."""

import doctest
import re
import shlex
from pathlib import Path

import pytest

from kernelcast.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "docs" / "cli.md"]


def test_readme_example():
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 5
    assert result.failed == 0


def test_readme_starts_with_the_two_commands():
    first = re.search(r"```bash\n(.*?)```", README.read_text(), re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first.splitlines()]
    assert commands == ["bash scripts/setup.sh && .venv/bin/kernelcast demo",
                        "bash scripts/setup.sh && .venv/bin/python -m pytest"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_stay_in_the_repository(page):
    """Relative links name files of the repository; nothing points outside it (a web
    address is fine: it is not a path on the reader's machine)."""
    text = page.read_text()
    assert "../shared" not in text and "/work/" not in text
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"https?://", target):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), target


def _subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return parser, action.choices


def _commands(text):
    """Every `kernelcast VERB ...` command of the page's bash blocks, continuations joined,
    comments dropped."""
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            for i, word in enumerate(words):
                if word.endswith("kernelcast") and i + 1 < len(words):
                    yield words[i + 1:]


def test_readme_commands_parse():
    """Each command the README shows is accepted by the parser as written."""
    parser, _ = _subparsers()
    commands = list(_commands(README.read_text()))
    assert len(commands) >= 10
    for words in commands:
        try:
            parser.parse_args([w for w in words if w not in ("&&",)])
        except SystemExit as exit:
            pytest.fail(f"kernelcast {' '.join(words)}: the parser refuses it ({exit})")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_flag_the_page_names_exists(page):
    parser, verbs = _subparsers()
    known = {o for p in (parser, *verbs.values()) for a in p._actions
             for o in a.option_strings}
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", page.read_text()))
    assert flags and flags <= known, sorted(flags - known)
