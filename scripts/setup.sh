#!/usr/bin/env bash
# Make .venv with kernelcast and its pinned kernel stack; does nothing when it is current.
# islpy-barvinok must overlay islpy after the ordinary install: it provides the same
# `islpy` module built with barvinok, which exact symbolic counting needs.
#
# PoCL, the CPU OpenCL device, is Debian's (libpocl2: PoCL 3.1, LLVM 15), registered in
# pyopencl's own ICD folder (pyopencl/.libs, which the ICD loader in its wheel always
# reads), where PyPI's pocl-binary-distribution put it before; not in /etc/OpenCL/vendors,
# so it is found whatever OCL_ICD_VENDORS says and only by this venv. Not PyPI's PoCL (3.0,
# its newest): it takes the target CPU from LLVM 14's host detection, which names CPUs
# newer than LLVM 14 (AMD Zen 5, ...) "generic", and every kernel build there fails with
# "unknown target CPU 'generic'". Debian's build (with patches Debian backported from PoCL
# 5) picks the target CPU from the CPU's features, so it works on any x86-64 CPU.
# Installing libpocl2 needs root (or sudo), once per machine.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
stamp=.venv/kernelcast-setup.stamp
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
pocl_installed() {
    [ "$(dpkg-query -W -f='${Status}' libpocl2 2>/dev/null)" = "install ok installed" ]
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && pocl_installed &&
        compgen -G ".venv/lib/python*/site-packages/pyopencl/.libs/pocl.icd" > /dev/null; then
    exit 0
fi
if ! pocl_installed; then
    echo "installing PoCL (Debian's libpocl2) ..." >&2
    sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libpocl2 > /dev/null
fi
echo "setting up .venv (pinned kernel stack, PoCL) ..." >&2
"$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
# PyPI's PoCL (the [pocl] extra, in venvs made before) would be a second PoCL platform.
.venv/bin/python -m pip uninstall -q -y --disable-pip-version-check \
    pocl-binary-distribution 2> /dev/null || true
libpocl=$(dpkg-query -L libpocl2 | grep '/libpocl\.so\.2$')
pyocl=$(.venv/bin/python -c "import pyopencl, os; print(os.path.dirname(pyopencl.__file__))")
mkdir -p "$pyocl/.libs"
echo "$libpocl" > "$pyocl/.libs/pocl.icd"
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
    islpy-barvinok==2025.2.5.post1
.venv/bin/python -c "import islpy; assert hasattr(islpy.Set, 'card'), 'islpy lacks barvinok'"
.venv/bin/python -c "
import pyopencl as cl
pocl = [p for p in cl.get_platforms() if p.name == 'Portable Computing Language']
assert len(pocl) == 1, f'want one PoCL platform, found {[p.version for p in pocl]}'
ctx = cl.Context(pocl[0].get_devices())
cl.Program(ctx, '__kernel void f(__global float *a) { a[0] = 1; }').build()
"
echo "$want" > "$stamp"
