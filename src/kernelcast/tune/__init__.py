"""Model-driven tuning: rank the variants of a Loopy kernel with a model, measure few.

Modules: ``space`` (search spaces over Loopy transformations, as data, and the default one
derived from a kernel), ``limits`` (what the ranked-for device can launch), ``tuner``
(rank every variant with a model; measure the top K, or search guided by the model),
``guided`` (the search that corrects the model with what it measured),
``methodology`` (how search strategies are scored on spaces measured exhaustively),
``families`` and ``corpus`` (kernels measured exhaustively: the judged families and the
training corpus), ``random_families`` (random looping kernels for the corpus),
``launches`` (the Loopy kernel of a benchmark plan's entry: suite case, random kernel,
family or corpus variant),
``variants`` (measured variants as a dataset to fit on), ``distributed`` (ranking and
measuring spread over processes or a Dask cluster) and ``kerneltuner`` (a bridge to
Kernel Tuner's cache files).
"""
