"""Model-driven tuning: rank the variants of a Loopy kernel with a model, measure the
few best (issue 23; in progress).

Modules: ``space`` (search spaces over Loopy transformations, as data: work-group shape,
work per work-item, unrolling; a default derived from the kernel) and ``tuner`` (rank
every variant with a model, measure the top K through a resumable campaign).
"""
