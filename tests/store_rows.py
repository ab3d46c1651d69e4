"""Measurement rows to store in tests: the device identity of a test store and a row
maker, shared by the store's test files (tests/test_store.py,
tests/test_store_integrity.py).

Public names: IDENTITY, make_row.
"""

#: the identity (backend, device, driver) of a store made in a test
IDENTITY = {"backend": "opencl", "device": "Test Device", "driver": "1.0"}


def make_row(key="k1", status="ok", **fields):
    """A row of *status* keyed *key*; a timed one ("ok", "unstable") with times whose
    minimum and median are its min_s and median_s; *fields* added or replaced last."""
    row = {"key": key, "case_name": f"case-{key}", "params": {"n": 1024, "m": 8},
           "kernelcast_version": "test", "status": status}
    if status in ("ok", "unstable"):
        row.update(min_s=1e-5, median_s=1.1e-5, times_s=[3e-5, 1e-5, 1.1e-5, 1.2e-5],
                   dropped=1, attempts=1, spreads=[0.1])
    row.update(fields)
    return row
