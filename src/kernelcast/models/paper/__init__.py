"""Stevens & Klöckner's model: run time as the inner product of fitted weights and the
kernel's properties (§2–3), fitted to the measurement suite by relative least squares
(§4.3; kernelcast.fitting.linear), unconstrained as in the paper or with non-negative
weights.

Public names: PaperModel.
"""

from __future__ import annotations

from kernelcast.errors import KernelcastError
from kernelcast.fitting.linear import LinearModel
from kernelcast.frontends.files import json_kind
from kernelcast.metrics import geometric_mean, relative_errors
from kernelcast.models.base import Parameter, WeightedModel, register


@register
class PaperModel(WeightedModel):
    """The paper's model. *nonnegative* forbids negative weights (the paper allows them;
    its Table 2 has some)."""

    name = "paper"
    summary = "Stevens & Klöckner's properties, relative least squares (the baseline)"

    parameters = (Parameter("nonnegative", "boolean", "fit non-negative weights (the "
                            "paper fits unconstrained ones)"),)

    format_1_names = (None, "paper", "linear")

    @classmethod
    def from_format_1(cls, doc: dict) -> tuple[dict, dict]:
        nonnegative = doc.get("fit", {}).get("nonnegative", False)
        if not isinstance(nonnegative, bool):
            raise KernelcastError(f"fit.nonnegative is {json_kind(nonnegative)}, not true "
                                  "or false")
        return {"nonnegative": nonnegative}, {"weights": doc.get("weights")}

    def __init__(self, *, nonnegative: bool = False):
        self.nonnegative = nonnegative

    def features(self, props, params: dict) -> dict[str, float]:
        return props.evaluate(params)

    def combine(self, parts, values):
        return parts

    def fit(self, dataset) -> PaperModel:
        X = self.design_matrix(dataset)
        y = dataset.seconds
        fit = LinearModel(nonnegative=self.nonnegative).fit(X, y)
        self.weights_ = {n: float(w) for n, w in zip(X.columns, fit.coef_, strict=True)}
        errors = relative_errors(fit.predict(X), y)
        self._set_fitted(dataset, {
            "criterion": "relative least squares" + (", non-negative weights"
                                                     if self.nonnegative else ""),
            "negative_weights": fit.negative_weights_, "solver": fit.solver_,
            "training_geomean_rel_error": geometric_mean(errors),
            "training_max_rel_error": float(errors.max())})
        return self
