"""From a measurement store to fitted weights: datasets of measured cases (dataset) and
the pure fitting functions the models use (linear: relative least squares and its log
form; overlap: per-work-item terms overlapping totals). Nothing here reads or writes files
but ``load_dataset``, which reads a store."""
