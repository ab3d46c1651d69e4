#!/usr/bin/env bash
# Fit every registered model to every committed GPU store and write data/profiles/
# <device>-<backend>-<model>.json (no GPU needed). Run after a change to a model or to data/.
#   scripts/fit_profiles.sh                 every model
#   scripts/fit_profiles.sh poppl-herz ...  only these (paper, extended, hong-kim, facts,
#                                           poppl-herz)
set -euo pipefail
cd "$(dirname "$0")/.."
kc=.venv/bin/kernelcast
models=("$@")
for model in "${models[@]}"; do
    case "$model" in
        paper|extended|hong-kim|facts|poppl-herz) ;;
        *) echo "fit_profiles.sh: no committed profiles of a model named '$model'" \
               "(paper, extended, hong-kim, facts, poppl-herz)" >&2; exit 2 ;;
    esac
done
wanted() { [ ${#models[@]} -eq 0 ] || printf '%s\n' "${models[@]}" | grep -qx "$1"; }

if wanted paper || wanted extended || wanted hong-kim || wanted facts; then
    for store in data/h100/opencl.sqlite data/h100/cuda.sqlite data/h200/opencl.sqlite \
                 data/h200/cuda.sqlite; do
        gpu=$(basename "$(dirname "$store")")
        backend=$(basename "$store" .sqlite)
        device=$(.venv/bin/python -c "import sys; from kernelcast.measure.store import Store
with Store(sys.argv[1]) as s: print(s.identity['device'])" "$store")
        slug=$(echo "$device" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-|-$//g')
        for model in paper extended hong-kim; do
            wanted "$model" || continue
            extra=()
            [ "$model" = hong-kim ] && extra=(--registers "data/$gpu/registers.json")
            "$kc" fit --db "$store" --model "$model" "${extra[@]}" \
                --profile "data/profiles/$slug-$backend-$model.json"
        done
        wanted facts || continue
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
fi

# Pöppl–Herz (docs/poppl-herz.md): both variants, fitted from the committed microbenchmark
# stores (xz-packed; benchmarks/poppl_herz.py measure) of the H100, the H200 and PoCL on a
# CPU, into data/profiles/<device>-opencl-poppl-herz[-simple].json. Each store is unpacked
# to a temporary file; the profile names the packed one. A profile whose fit is unchanged
# is left as it is (its created_at too): a refit gives the identical file.
if wanted poppl-herz; then
    .venv/bin/python - data/h100/poppl-herz.sqlite.xz data/h200/poppl-herz.sqlite.xz \
        data/pocl/poppl-herz.sqlite.xz <<'PY'
import sys
from kernelcast.workflow import fit_committed_profile
for packed in sys.argv[1:]:
    for name, classes in (("poppl-herz", True), ("poppl-herz-simple", False)):
        path, written = fit_committed_profile(packed, "data/profiles", "poppl-herz", name,
                                              classes=classes)
        print(path if written else f"{path} (unchanged)")
PY
fi
