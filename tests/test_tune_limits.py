"""The limits of the device a model ranks for (kernelcast.tune.limits): recorded in a
profile and read back, else the packaged hardware description's, refused when damaged."""

import json
from pathlib import Path

import pytest

from kernelcast.errors import ProfileError
from kernelcast.models import get_model
from kernelcast.profile import load_profile, save_profile
from kernelcast.tune.limits import Limits, of_model, tighter

PAPER = Path(__file__).resolve().parents[1] / "data" / "profiles" / \
    "nvidia-h100-80gb-hbm3-cuda-paper.json"


def test_a_profile_without_limits_takes_its_gpus_hardware_description():
    limits = of_model(load_profile(PAPER))
    assert (limits.max_group_size, limits.local_mem_bytes, limits.warp_size) == \
        (1024, 49152, 32)
    assert "hardware description of NVIDIA H100 80GB HBM3" in limits.source
    assert of_model(get_model("hong-kim", hardware="h200").fit()).max_group_size == 1024


def test_limits_recorded_in_a_profile_are_read_back(tmp_path):
    model = load_profile(PAPER)
    recorded = Limits(4096, 65536, None, "a CPU, as its driver reports it")
    model.provenance_["limits"] = recorded.as_dict()
    save_profile(model, tmp_path / "p.json")
    assert of_model(load_profile(tmp_path / "p.json")) == recorded


@pytest.mark.parametrize("bad", [{"max_group_size": 0}, {"max_group_size": 64, "x": 1},
                                 {"max_group_size": 64, "local_mem_bytes": -1}, []])
def test_damaged_limits_are_refused_in_one_line(tmp_path, bad):
    doc = json.loads(PAPER.read_text())
    doc["limits"] = bad
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match="limits is") as err:
        load_profile(tmp_path / "p.json")
    assert "\n" not in str(err.value)


def test_tighter_is_what_launches_on_both():
    gpu, cpu = Limits(1024, 49152, 32, "gpu"), Limits(4096, 65536, None, "cpu")
    both = tighter(gpu, cpu)
    assert (both.max_group_size, both.local_mem_bytes, both.warp_size) == (1024, 49152, 32)
    assert tighter(Limits(256, None), cpu).local_mem_bytes == 65536
