"""Leave-one-class-out cross-validation of any model: for each kernel class of a dataset,
fit a fresh copy of the model on every other class and predict the held-out one. Every
reported error is then of a class the model never saw.

Public names: cross_validate.
"""

from __future__ import annotations

import pandas as pd

from kernelcast.metrics import relative_errors


def cross_validate(model, dataset, progress=None) -> pd.DataFrame:
    """One row per case of *dataset*, predicted by *model* (a template: it is cloned,
    never changed) fitted without the case's class: its information, ``predicted_s``,
    ``measured_s``, ``rel_error`` and ``unseen_properties`` (weighted features of the
    held-out class that no training class had; they count as zero)."""
    classes = sorted(dataset.info.kernel_class.unique())
    parts = []
    for index, held_out in enumerate(classes, 1):
        if progress is not None:
            print(f"cross-validation {index}/{len(classes)}: {held_out}", file=progress,
                  flush=True)
        test = (dataset.info.kernel_class == held_out).to_numpy()
        fitted = model.clone().fit(dataset.subset(~test))
        held = dataset.subset(test)
        predicted = fitted.predict_dataset(held)
        unseen = fitted.unseen(held) if hasattr(fitted, "unseen") else []
        parts.append(held.info.assign(predicted_s=predicted, measured_s=held.seconds,
                                      rel_error=relative_errors(predicted, held.seconds),
                                      unseen_properties=", ".join(unseen)))
    return pd.concat(parts, ignore_index=True)
