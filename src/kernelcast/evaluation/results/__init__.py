"""The results page (docs/results.md) as code: every model fitted to the committed
measurement stores and evaluated, and every section of the page made from data/, one
module per topic. ``build(data_root, jobs, do_cv)`` returns the whole page;
scripts/results.py writes it. Nothing here finds data by the working directory: every
section takes the data root (``Data``), and paths on the page are relative to the
repository that holds it.

- common: labels of the GPUs, backends and models, number and table formatting, ``Data``
  (the data root, git dates of its files) and ``Figures`` (the drawers, passed in);
- stores: fitting and evaluating every model on each store (in worker processes), the
  Data, Summary, Test kernels (Table 1), Validation and Cross-validation sections;
- evidence: the held-out set, what the validation kernels leave out, N-body;
- overlap: the extended model's overlap exponent q (data/cv/);
- calibration: device time spent measuring (timestamps, campaign logs);
- speed: prediction and fit speed (data/speed.json), property extraction (quoted);
- reliability: kills, corruptions, concurrency and fuzzing (data/reliability.json);
- grophecy: projections from code skeletons (data/grophecy/, data/<gpu>/grophecy.json);
- tuning: tuning regret, the learned model's corpus, ranking speed, search strategies;
- several_gpus: measuring and calibrating on several GPUs of one host;
- poppl_herz: Pöppl–Herz and every model on random kernels;
- opencl_programs: real OpenCL programs predicted from source, their counters;
- criteria: the fine-grained model's microbenchmarks, case studies and counters;
- facts: the hardware facts against Nsight Compute, the extended model on the facts;
- learned: the learned model on the hardware facts;
- hardware: the packaged hardware parameters of the Hong–Kim model and the facts;
- backends: OpenCL and CUDA compared on the same cases;
- page: the header and ``build``, every section in the page's order.

Figures are drawn by kernelcast.report and criteria profiles read by kernelcast.profile,
both layers above evaluation: ``build`` takes them as arguments (``Figures``,
``load_profile``) from whoever writes the page.

Public names: build, Data, Figures.
"""

from kernelcast.evaluation.results.common import Data, Figures
from kernelcast.evaluation.results.page import build

__all__ = ["build", "Data", "Figures"]
