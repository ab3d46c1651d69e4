#!/usr/bin/env bash
# Make .venv with kernelcast and its pinned kernel stack; does nothing when it is current.
# islpy-barvinok must overlay islpy after the ordinary install: it provides the same
# `islpy` module built with barvinok, which exact symbolic counting needs.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
stamp=.venv/kernelcast-setup.stamp
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
echo "setting up .venv (pinned kernel stack, PoCL) ..." >&2
"$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[pocl,test]"
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --force-reinstall \
    islpy-barvinok==2025.2.5.post1
.venv/bin/python -c "import islpy; assert hasattr(islpy.Set, 'card'), 'islpy lacks barvinok'"
echo "$want" > "$stamp"
