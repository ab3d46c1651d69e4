"""Judging models on measurements: Table 1 of any model and every model side by side
(tables), leave-one-class-out cross-validation (crossval). Their relative-error metrics
are kernelcast.metrics, which fitting and the models use too."""
