"""The fine-grained performance model of shared/seeds 003 ("A Fine-grained Performance
Model for GPU Architectures"). This first slice holds §III: the microbenchmarks
(microbenchmarks) and the static checks of their PTX and SASS (checks), the paper's
Figure 2 (b) and (c).

Public names: Microbenchmark, microbenchmarks, throughput, latency, shared_conflicts,
OPS, check_ptx, check_sass, ptx_functions, sass_functions.
"""

from kernelcast.models.criteria.checks import (
    check_ptx,
    check_sass,
    ptx_functions,
    sass_functions,
)
from kernelcast.models.criteria.microbenchmarks import (
    OPS,
    Microbenchmark,
    latency,
    microbenchmarks,
    shared_conflicts,
    throughput,
)

__all__ = ["OPS", "Microbenchmark", "check_ptx", "check_sass", "latency", "microbenchmarks",
           "ptx_functions", "sass_functions", "shared_conflicts", "throughput"]
