#!/usr/bin/env bash
# Fit every registered model to every committed GPU store and write data/profiles/
# <device>-<backend>-<model>.json (no GPU needed). Run after a change to a model or to data/.
set -euo pipefail
cd "$(dirname "$0")/.."
kc=.venv/bin/kernelcast
for store in data/h100/opencl.sqlite data/h100/cuda.sqlite data/h200/opencl.sqlite \
             data/h200/cuda.sqlite; do
    gpu=$(basename "$(dirname "$store")")
    backend=$(basename "$store" .sqlite)
    device=$(.venv/bin/python -c "import sys; from kernelcast.measure.store import Store
with Store(sys.argv[1]) as s: print(s.identity['device'])" "$store")
    slug=$(echo "$device" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-|-$//g')
    for model in paper extended hong-kim; do
        extra=()
        [ "$model" = hong-kim ] && extra=(--registers "data/$gpu/registers.json")
        "$kc" fit --db "$store" --model "$model" "${extra[@]}" \
            --profile "data/profiles/$slug-$backend-$model.json"
    done
    # the facts model reads its launches' facts from the committed summaries
    # (benchmarks/facts_model.py summaries) instead of predicting 2,000 launches again
    .venv/bin/python - "$store" "data/$gpu/facts-summaries.json.xz" \
        "data/profiles/$slug-$backend-facts.json" <<'PY'
import sys, warnings
warnings.simplefilter("ignore")
import kernelcast.models.extended as extended
from kernelcast.models.extended.facts import SummaryCache
from kernelcast.profile import save_profile
from kernelcast.workflow import fit_store
extended.SUMMARIES = SummaryCache(sys.argv[2])
print(save_profile(fit_store(sys.argv[1], "facts"), sys.argv[3]))
PY
done
