"""Judging models on measurements: relative-error metrics (metrics), Table 1 of any model
and every model side by side (tables), leave-one-class-out cross-validation (crossval)."""
