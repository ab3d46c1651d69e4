"""Judging models on measurements: Table 1 of any model and every model side by side
(tables), leave-one-class-out cross-validation (crossval), and the results page made from
the committed data (results: every model fitted to the stores and evaluated, and each
topic's sections of docs/results.md). Their relative-error metrics are kernelcast.metrics,
which fitting and the models use too."""
