"""From a measurement store to fitted weights: datasets of measured cases (dataset), a
GPU's microbenchmark document for the criteria model (microbenchmarks) and the pure
fitting functions the models use (linear: relative least squares and its log form;
overlap: per-work-item terms overlapping totals). Nothing here reads or writes files but
``load_dataset``, which reads a store, and ``load_microbenchmarks``, which reads a
microbenchmark document."""
