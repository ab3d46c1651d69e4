"""One campaign per device at a time: a lock file per device, held while measuring.

Two campaigns timing one device at once both get contended times (1.8–2.8× slower on
PoCL, measured 2026-11-25) that look like good ones. Every backend made by make_backend
holds its device's lock until it is closed; a second one waits up to *wait* seconds and
then raises DeviceBusyError naming the holder (its process id, command and start time,
which the holder writes into the lock file).

The lock is ``fcntl.flock`` on a file in KERNELCAST_LOCK_DIR (default: kernelcast-locks in
the system's temporary folder): the kernel releases it when the holder dies, even by
SIGKILL, so a crashed campaign never leaves the device locked. Locks are keyed by device
name and instance (kernelcast.measure.devices), not backend: an OpenCL and a CUDA campaign
on one GPU contend just the same, and two identical GPUs of a host are locked apart. Within
one process a device's lock is shared (counted), so a calibration that evaluates on the
same device does not lock itself out.

Public names: DeviceLock, lock_dir.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from kernelcast.errors import DeviceBusyError

_held: dict[str, list] = {}  # lock path -> [open file, count] of this process


def lock_dir() -> Path:
    return Path(os.environ.get("KERNELCAST_LOCK_DIR")
                or Path(tempfile.gettempdir()) / "kernelcast-locks")


def _path(device_name: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", device_name).strip("_") or "device"
    if len(slug) > 100:  # shortened, but never two devices onto one file
        slug = slug[:80] + "-" + hashlib.sha256(device_name.encode()).hexdigest()[:16]
    return lock_dir() / f"{slug}.lock"


def _command() -> str:
    """This process's command line, shortened: ``kernelcast measure --suite …``."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if program in ("__main__.py", "kernelcast"):
        program = "kernelcast"
    words = " ".join([program, *sys.argv[1:]])
    return words if len(words) <= 80 else words[:79] + "…"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text())
        return (f"process {info['pid']} ({info['command']}, since {info['since']})")
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


class DeviceLock:
    """The lock of *device* (a DeviceInfo, or a device's name); acquired on construction
    (waiting up to *wait* seconds), released by release() or when the process ends."""

    def __init__(self, device, wait: float = 0.0):
        device_name = device if isinstance(device, str) else device.lock_name
        self.device_name, self.path = device_name, _path(device_name)
        key = str(self.path)
        if key in _held:
            _held[key][1] += 1
            self._released = False
            return
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        try:
            folder.chmod(0o1777)  # shared by every user of the machine, like /tmp
        except OSError:
            pass
        handle = open(self.path, "a+")  # noqa: SIM115 - held until release
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.close()
                    waited = f" after waiting {wait:g} s" if wait > 0 else ""
                    raise DeviceBusyError(
                        f"{device_name} is being measured by {_holder(self.path)}{waited}; "
                        "timings taken at the same time would be contended. Wait for it to "
                        "finish, or pass --wait SECONDS") from None
                time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({
            "pid": os.getpid(),
            "command": _command(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S")}))
        handle.flush()
        _held[key] = [handle, 1]
        self._released = False

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        key = str(self.path)
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _held[key]
            entry[0].close()  # closing the file releases the flock
