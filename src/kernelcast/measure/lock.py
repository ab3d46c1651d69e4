"""One campaign per device at a time: a lock file per device, held while measuring.

Two campaigns timing one device at once both get contended times (1.8–2.8× slower on
PoCL) that look like good ones. Every backend made by make_backend holds its device's
lock until it is closed; a second one waits up to *wait* seconds and then raises
DeviceBusyError naming the holder (its process id, command and start time, which the
holder writes into the lock file).

The lock is ``fcntl.flock`` on a file in KERNELCAST_LOCK_DIR (default: kernelcast-locks in
the system's temporary folder): the kernel releases it when the holder dies, even by
SIGKILL, so a crashed campaign never leaves the device locked. Locks are keyed by device
name and instance (kernelcast.measure.devices), not backend: an OpenCL and a CUDA campaign
on one GPU contend just the same, and two identical GPUs of a host are locked apart. Within
one process a device's lock is shared (counted), so a calibration that evaluates on the
same device does not lock itself out.

A lock file must be a regular file: a FIFO, device node, socket or symbolic link at its
path (the folder is shared by every user of the machine) is refused with a UsageError,
never opened for writing (``open_lock_file``). The lock folder is made world-writable
(like /tmp) only where kernelcast creates it; an existing folder keeps its mode.

Processes that share one device under one campaign (a host's measuring workers,
kernelcast.tune.distributed) take turns on it with ``take_turn``: a second lock file
beside the device's, held for one case at a time.

Public names: DeviceLock, take_turn, lock_dir, open_lock_file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import time
from pathlib import Path

from kernelcast.errors import DeviceBusyError, UsageError
from kernelcast.frontends.files import check_regular_file, describe_os_error

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


def _holder(handle) -> str:
    """Who holds the lock, as written in its file (read through the open *handle*)."""
    try:
        handle.seek(0)
        info = json.loads(handle.read())
        return (f"process {info['pid']} ({info['command']}, since {info['since']})")
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def open_lock_file(path):
    """The lock file at *path*, created where missing, open for reading and writing (a
    binary file object). Anything but a regular file there is a UsageError naming it:
    a symbolic link is not followed (in a folder every user may write to, it could
    point at another user's file) and a FIFO is not waited on (O_NONBLOCK)."""
    check_regular_file(path, "lock file")
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UsageError(f"{path} is a symbolic link, not a lock file") from None
        raise UsageError(f"cannot open the lock file {path}: {describe_os_error(err)}"
                         ) from None
    handle = os.fdopen(fd, "r+b")
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # put there since it was checked
        handle.close()
        raise UsageError(f"{path} is not a regular file, not a lock file")
    return handle


def _lock_folder(folder: Path) -> None:
    """Make the lock folder (world-writable with the sticky bit, like /tmp, so that every
    user's campaigns share it) unless it exists; refuse a path that is no folder."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        if not folder.is_dir():
            raise UsageError(f"the lock folder {folder} (KERNELCAST_LOCK_DIR) is not a "
                             "directory") from None
        return
    except OSError as err:
        raise UsageError(f"cannot make the lock folder {folder} (KERNELCAST_LOCK_DIR): "
                         f"{describe_os_error(err)}") from None
    try:
        folder.chmod(0o1777)
    except OSError:
        pass


@contextlib.contextmanager
def take_turn(device):
    """Hold *device*'s turn (a DeviceInfo, or a device's name) while the block runs,
    waiting for it as long as it takes: the processes sharing a device time one case at a
    time. The turn is not the device's lock (DeviceLock), which keeps other campaigns
    away and may be held by the caller throughout."""
    device_name = device if isinstance(device, str) else device.lock_name
    path = _path(device_name)
    path = path.with_name(path.stem + ".workers.lock")
    _lock_folder(path.parent)
    with open_lock_file(path) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
        _lock_folder(self.path.parent)
        handle = open_lock_file(self.path)  # held until release
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _holder(handle)
                    handle.close()
                    waited = f" after waiting {wait:g} s" if wait > 0 else ""
                    raise DeviceBusyError(
                        f"{device_name} is being measured by {holder}{waited}; "
                        "timings taken at the same time would be contended. Wait for it to "
                        "finish, or pass --wait SECONDS") from None
                time.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({
            "pid": os.getpid(),
            "command": _command(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
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
