"""Running kernels on devices: arguments, backends, timing, the measurement store.

Modules: arrays (arguments from a kernel's declarations), codegen (OpenCL and CUDA code from
Loopy), devices (what the machine offers), backends/ (the abstract Backend; OpenCL and
CUDA), protocol (the §4.2 timing protocol), verify (checking a case against its reference),
store (the SQLite measurement store), campaign (many cases into one store, resumably, each
with a status). This package imports neither the suites nor the package root, and no GPU
library until a backend is made; suite campaigns are kernelcast.suites.campaign.
"""
