"""The fine-grained performance model of shared/seeds 003 ("A Fine-grained Performance
Model for GPU Architectures"): the characterization functions a GPU's microbenchmarks are
turned into (characterization), the optimization criteria and potential speedups of a
profiled application, one function per criterion (criteria), the hints, tables and
figures made of them (advice) and the model behind the Model protocol (model:
``get_model("criteria")``).

What it is fitted from and judged on lives with the rest of kernelcast's suites and
measurements: the microbenchmarks and the case studies (kernelcast.suites.
criteria_microbenchmarks, kernelcast.suites.criteria_cases), the static checks of the
microbenchmarks' PTX and SASS (kernelcast.facts.ptx_checks), the microbenchmark document
as a fit's input (kernelcast.fitting.microbenchmarks), the case studies as profiled
(kernelcast.evaluation.criteria_cases) and kernelcast's counts against the hardware's
counters (kernelcast.evaluation.criteria_counters).
"""
