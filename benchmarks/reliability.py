"""How kernelcast survives what happens to a campaign; writes data/reliability.json.

On this machine's PoCL device (the CPU), with a real campaign of the CPU measurement suite
(global_access at p=13, float32: 27 cases):

1. kills: --kills campaigns killed with SIGKILL after a delay spread from 5 ms (before the
   store exists) to a few seconds, each then resumed to the end. Survived means: the store
   is absent or whole after the kill, the resumed campaign ends with status 0, every case
   is stored exactly once, the rows from before the kill are unchanged, none is damaged.
   Also --worker-kills campaigns whose measuring worker process is killed: the case it ran
   is recorded ``crashed`` and the campaign goes on to the end.
2. corruptions: --corruptions copies of a finished store, each with one bit flipped in one
   stored value of one row (the triggers dropped to allow it, as a disk or an editor
   would), and --byte-flips copies with one random byte of the file changed. Each is
   opened and read as kernelcast does: the change is detected (the row is reported damaged,
   or the store refused with a one-line error), harmless (every row reads back as before),
   or undetected (a row reads back changed and is not flagged) — the last must be 0.
3. concurrency: a second campaign on a device being measured is refused naming the first;
   --creators processes creating one store at once all succeed, --races times.
4. fuzz: benchmarks/fuzz.py's malformed invocations (--fuzz of them), read from its JSON.

Run:  .venv/bin/python benchmarks/reliability.py [--kills 12] [--corruptions 200] ...
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ["measure", "--suite", "measurement-cpu", "--classes", "global_access", "--p",
            "global_access=13", "--dtype", "float32", "--runs", "6", "--tolerance", "1",
            "--device", "Portable"]
CASES = 27


def kernelcast(*argv, **kw):
    return subprocess.run([sys.executable, "-m", "kernelcast", *map(str, argv)],
                          capture_output=True, text=True, timeout=600, check=False, **kw)


def raw_rows(db: Path) -> list[tuple]:
    if not db.exists() or db.stat().st_size == 0:
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            return conn.execute("SELECT * FROM measurements ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            return []


def store_rows(db: Path):
    from kernelcast.measure.store import Store

    with Store(db) as store:
        return store.rows()


# {{{ kills

def one_kill(folder: Path, delay: float, target: str, index: int) -> dict:
    db = folder / f"kill-{target}-{index}.sqlite"
    command = [sys.executable, "-m", "kernelcast", *CAMPAIGN, "--db", str(db)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    time.sleep(delay)
    victim = process.pid
    if target == "worker":  # the measuring worker, a child of the campaign
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            children = subprocess.run(["pgrep", "-P", str(process.pid)], check=False,
                                      capture_output=True,
                                      text=True).stdout.split()
            if children and raw_rows(db):
                victim = int(children[0])
                break
            time.sleep(0.05)
    ended_first = process.poll() is not None
    if not ended_first:
        os.kill(victim, signal.SIGKILL)
    if target == "worker":
        process.wait(timeout=600)
        rows = store_rows(db)
        crashed = [r for r in rows if r["status"] == "crashed"]
        return {"target": target, "delay_s": delay, "ended_before_kill": ended_first,
                "exit": process.returncode, "rows": len(rows), "crashed": len(crashed),
                "survived": process.returncode == 0 and len(rows) == CASES
                and len(crashed) <= 1 and len({r["case_name"] for r in rows}) == CASES}
    process.wait(timeout=60)
    before = raw_rows(db)
    whole = True
    if db.exists() and db.stat().st_size:
        try:
            store_rows(db)
        except Exception:  # noqa: BLE001 - any failure to open counts against survival
            whole = False
    resumed = kernelcast(*CAMPAIGN, "--db", db)
    rows = store_rows(db)
    names = [r["case_name"] for r in rows]
    survived = (whole and resumed.returncode == 0 and len(names) == CASES
                and len(set(names)) == CASES and raw_rows(db)[:len(before)] == before
                and not any(r["damage"] for r in rows))
    return {"target": target, "delay_s": delay, "ended_before_kill": ended_first,
            "rows_before": len(before), "rows_after": len(rows), "whole_after_kill": whole,
            "resume_exit": resumed.returncode, "survived": survived}


def kills(folder: Path, count: int, worker_count: int, rng: random.Random) -> dict:
    """The campaign is run once to the end first (its store is the one corrupted later);
    a third of the kills then come between 5 ms and a quarter of its duration, evenly on a
    log scale (process start, store creation), the rest evenly up to 80% of it."""
    started = time.monotonic()
    whole = kernelcast(*CAMPAIGN, "--db", folder / "finished.sqlite")
    duration = time.monotonic() - started
    if whole.returncode != 0:
        raise SystemExit(f"the campaign does not run here: {whole.stderr[-2000:]}")
    early, late = count // 3, count - count // 3
    quarter = max(duration / 4, 0.01)
    delays = [0.005 * (quarter / 0.005) ** (i / max(early, 1)) for i in range(early)]
    delays += [quarter + (0.8 * duration - quarter) * (i + 1) / late for i in range(late)]
    delays = [d * rng.uniform(0.95, 1.0) for d in delays]
    runs = []
    for index, delay in enumerate(delays):
        runs.append(one_kill(folder, delay, "campaign", index))
        print(f"  kill after {delay:.3f} s: {runs[-1]}", file=sys.stderr)
    for index in range(worker_count):
        runs.append(one_kill(folder, 0.0, "worker", index))
        print(f"  worker kill: {runs[-1]}", file=sys.stderr)
    killed = [r for r in runs if not r["ended_before_kill"]]
    return {"runs": runs, "campaign_seconds": round(duration, 2),
            "ended_before_kill": len(runs) - len(killed),
            "campaign_kills": sum(r["target"] == "campaign" for r in killed),
            "worker_kills": sum(r["target"] == "worker" for r in killed),
            "survived": sum(r["survived"] for r in killed), "total": len(killed)}

# }}}


# {{{ corruptions

NUMERIC = ("min_s", "median_s", "p", "t", "dropped", "attempts", "max_rel_error")
TEXT = ("case_name", "params", "times_s", "status", "device", "spreads", "key")


def flip_bit(value, rng: random.Random):
    if isinstance(value, float):
        (bits,) = struct.unpack("<Q", struct.pack("<d", value))
        return struct.unpack("<d", struct.pack("<Q", bits ^ (1 << rng.randrange(64))))[0]
    if isinstance(value, int):
        return value ^ (1 << rng.randrange(31))
    data = bytearray(value.encode())
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(7)  # stays ASCII-or-not as it falls
    return bytes(data).decode("utf-8", "replace")


def judge(copy: Path, original: dict) -> str:
    from kernelcast.errors import KernelcastError

    try:
        rows = store_rows(copy)
    except KernelcastError:
        return "refused"
    except Exception:  # noqa: BLE001 - a traceback where a message was owed
        return "traceback"
    if any(r["damage"] for r in rows):
        return "detected"
    now = {r["key"]: {k: v for k, v in r.items() if k not in ("id", "damage")} for r in rows}
    return "harmless" if now == original else "undetected"


def corruptions(folder: Path, store: Path, values: int, bytes_: int,
                rng: random.Random) -> dict:
    original = {r["key"]: {k: v for k, v in r.items() if k not in ("id", "damage")}
                for r in store_rows(store)}
    outcomes = {"value": {}, "byte": {}}
    for i in range(values):
        copy = folder / f"value-{i}.sqlite"
        shutil.copy(store, copy)
        with sqlite3.connect(copy) as conn:
            conn.execute("DROP TRIGGER IF EXISTS measurements_append_only_update")
            ids = [r[0] for r in conn.execute("SELECT id FROM measurements")]
            column = rng.choice(NUMERIC + TEXT)
            row_id = rng.choice(ids)
            (value,) = conn.execute(f"SELECT {column} FROM measurements WHERE id = ?",
                                    (row_id,)).fetchone()
            if value is None:
                column, value = "case_name", conn.execute(
                    "SELECT case_name FROM measurements WHERE id = ?", (row_id,)).fetchone()[0]
            try:
                conn.execute(f"UPDATE measurements SET {column} = ? WHERE id = ?",
                             (flip_bit(value, rng), row_id))
            except sqlite3.IntegrityError:  # a CHECK or UNIQUE the flip broke: kept out
                outcomes["value"]["refused by SQLite"] = \
                    outcomes["value"].get("refused by SQLite", 0) + 1
                continue
        verdict = judge(copy, original)
        outcomes["value"][verdict] = outcomes["value"].get(verdict, 0) + 1
    size = store.stat().st_size
    for i in range(bytes_):
        copy = folder / f"byte-{i}.sqlite"
        shutil.copy(store, copy)
        with open(copy, "r+b") as f:
            offset = rng.randrange(size)
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        verdict = judge(copy, original)
        outcomes["byte"][verdict] = outcomes["byte"].get(verdict, 0) + 1
    return outcomes

# }}}


# {{{ concurrency

def concurrency(folder: Path, creators: int, races: int) -> dict:
    first_db, second_db = folder / "first.sqlite", folder / "second.sqlite"
    first = subprocess.Popen([sys.executable, "-m", "kernelcast", *CAMPAIGN, "--db",
                              str(first_db)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not raw_rows(first_db) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = kernelcast(*CAMPAIGN, "--db", second_db)
    first.wait(timeout=600)
    refused = (second.returncode == 1 and f"process {first.pid}" in second.stderr
               and not raw_rows(second_db))
    script = ("import sys\nfrom kernelcast.measure.store import Store\n"
              "Store(sys.argv[1], {'backend': 'opencl', 'device': 'd', 'driver': '1', "
              "'compute_units': 2}).close()\n")
    ok = 0
    for race in range(races):
        db = folder / f"race-{race}.sqlite"
        processes = [subprocess.Popen([sys.executable, "-c", script, str(db)],
                                      stderr=subprocess.PIPE, text=True)
                     for _ in range(creators)]
        codes = [p.wait(timeout=120) for p in processes]
        ok += all(c == 0 for c in codes) and bool(store_rows(db) == [])
    return {"second_campaign_refused_naming_the_first": refused,
            "second_campaign_message": second.stderr.strip().splitlines()[-1:],
            "creators": creators, "races": races, "races_all_created": ok}

# }}}


def fuzz(count: int, folder: Path) -> dict | None:
    script = ROOT / "benchmarks" / "fuzz.py"
    if not script.exists():
        return None
    out = folder / "fuzz.json"
    result = subprocess.run([sys.executable, str(script), "--invocations", str(count),
                             str(out)], capture_output=True, text=True, timeout=3600,
                            check=False)
    if not out.exists():  # it exits 1 when it found a lie, and still writes its summary
        return {"error": result.stderr[-2000:]}
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=15, help="campaigns killed (SIGKILL)")
    parser.add_argument("--worker-kills", type=int, default=3,
                        help="campaigns whose measuring worker is killed")
    parser.add_argument("--corruptions", type=int, default=200,
                        help="stores with one bit of one stored value flipped")
    parser.add_argument("--byte-flips", type=int, default=200,
                        help="stores with one random byte of the file changed")
    parser.add_argument("--creators", type=int, default=8,
                        help="processes creating one store at once")
    parser.add_argument("--races", type=int, default=5, help="how many times")
    parser.add_argument("--fuzz", type=int, default=5000,
                        help="malformed invocations (benchmarks/fuzz.py)")
    parser.add_argument("--seed", type=int, default=0, help="of every random choice")
    parser.add_argument("--out", default=str(ROOT / "data" / "reliability.json"),
                        help="where the JSON summary goes")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kernelcast-reliability-") as tmp:
        folder = Path(tmp)
        os.environ["KERNELCAST_LOCK_DIR"] = str(folder / "locks")
        print("kills ...", file=sys.stderr)
        killed = kills(folder, args.kills, args.worker_kills, rng)
        finished = folder / "finished.sqlite"
        print("corruptions ...", file=sys.stderr)
        corrupted = corruptions(folder, finished, args.corruptions, args.byte_flips, rng)
        print("concurrency ...", file=sys.stderr)
        concurrent = concurrency(folder, args.creators, args.races)
        print("fuzz ...", file=sys.stderr)
        fuzzed = fuzz(args.fuzz, folder)
    summary = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "device": "PoCL (the CPU)", "seed": args.seed,
        "seconds": round(time.monotonic() - started, 1),
        "kills": killed, "corruptions": corrupted, "concurrency": concurrent,
        "fuzz": fuzzed}
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "kills"}, indent=1))
    print(f"kills survived: {killed['survived']} of {killed['total']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
