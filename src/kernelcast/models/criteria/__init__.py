"""The fine-grained performance model of shared/seeds 003 ("A Fine-grained Performance
Model for GPU Architectures"): the microbenchmarks (microbenchmarks) and the static checks
of their PTX and SASS (checks), the paper's Figure 2 (b) and (c); the characterization
functions (characterization); the optimization criteria and potential speedups of a
profiled application (criteria) and the hints, tables and figures made of them (advice);
the model behind the Model protocol (model: ``get_model("criteria")``); the case studies
(cases); and kernelcast's counts against the hardware's counters (counters).

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
