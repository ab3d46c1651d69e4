"""The fine-grained model's microbenchmarks (seed 003, §III) on an NVIDIA GPU: the command
line of kernelcast.suites.criteria_microbenchmarks (measuring) and of
kernelcast.workflow.fit_store (fitting).

  measure OUTDIR (on the GPU machine: cupy, nvcc, nvdisasm): compile, check and time
      every microbenchmark (kernelcast.suites.criteria_microbenchmarks.
      measure_microbenchmarks); writes OUTDIR/microbenchmarks.json and
      OUTDIR/listings.tar.xz.
  profile MICROBENCHMARKS_JSON PROFILE (no GPU): fit the fine-grained model (the
      criteria model) to a measure's JSON and write its device profile: the
      characterization functions, latencies and f32 throughput that ``kernelcast
      advise`` needs. data/profiles/<device>-cuda-criteria.json were written so from
      data/<gpu>/criteria/microbenchmarks.json.

Run on the device:  python benchmarks/criteria_microbenchmarks.py measure OUTDIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def measure(out: Path) -> int:
    from kernelcast.suites.criteria_microbenchmarks import measure_microbenchmarks

    measure_microbenchmarks(out, progress=sys.stdout)
    return 0


def profile(measurements: Path, path: Path) -> int:
    from kernelcast.profile import save_profile
    from kernelcast.workflow import fit_store

    model = fit_store(measurements, "criteria", profile_path=path)
    print(f"{model.provenance_['device']}: {save_profile(model, path)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    m = verbs.add_parser("measure", help="compile, check and time on the GPU")
    m.add_argument("out", type=Path, help="folder of the results")
    p = verbs.add_parser("profile", help="fit the criteria model and write its profile")
    p.add_argument("measurements", type=Path, help="a measure's microbenchmarks.json")
    p.add_argument("profile", type=Path, help="the profile to write (JSON)")
    args = parser.parse_args()
    if args.verb == "profile":
        return profile(args.measurements, args.profile)
    return measure(args.out)


if __name__ == "__main__":
    sys.exit(main())
