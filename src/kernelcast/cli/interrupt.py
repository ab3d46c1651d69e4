"""Stopping cleanly on Ctrl-C (SIGINT) and SIGTERM.

Every measurement is committed to its store before the next starts, so an interrupted
campaign loses at most the case it was timing. Instead of a KeyboardInterrupt traceback
(SIGINT) or a silent exit (SIGTERM), the command says how many measurements this run
stored, where, and that running it again resumes; it exits with 130 (SIGINT) or 143
(SIGTERM), as shells do for those signals.

Public names: Terminated, catch_sigterm, interrupted.
"""

from __future__ import annotations

import signal


class Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread by the handler catch_sigterm installs)."""


def _raise_terminated(signum, frame):
    raise Terminated


def catch_sigterm() -> None:
    """Turn SIGTERM into Terminated, so that it unwinds like Ctrl-C."""
    signal.signal(signal.SIGTERM, _raise_terminated)


def interrupted(error: BaseException) -> tuple[str, int]:
    """The line to print and the exit status after *error* (KeyboardInterrupt or
    Terminated) stopped a command."""
    from kernelcast.measure.store import rows_added_by_path

    name, status = ("SIGTERM", 143) if isinstance(error, Terminated) else ("Ctrl-C", 130)
    stored = {path: n for path, n in rows_added_by_path().items() if n}
    if stored:
        where = ", ".join(f"{n} into {path}" for path, n in stored.items())
        line = (f"stopped by {name}: this run stored {sum(stored.values())} measurements "
                f"({where}); run the same command again to resume (stored cases are "
                "skipped)")
    else:
        line = f"stopped by {name}: nothing was stored by this run"
    return line, status
