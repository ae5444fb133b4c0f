# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule deviceshare-arguments and its parts: deviceshare arguments Volcano 1.15.1 would
stop on (klog.Fatal) or silently ignore."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.policy import deviceshare as ds
from ansible_collections.gpucloud.platform.plugins.module_utils.policy import volcano_catalog as vc
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_TIERS,
    build_scheduler_conf,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    argument_errors,
    scheduler_conf_errors,
)

VOLCANO = Path("/root/go/pkg/mod/volcano.sh/volcano@v1.15.1")
FIELD = "tiers[1].plugins[1](deviceshare)"


def conf(arguments=None, predicates=True, **options):
    """A configuration with deviceshare as the second plugin of the second tier."""
    plugin = {"name": "deviceshare", **options}
    if arguments is not None:
        plugin["arguments"] = arguments
    second = [{"name": "predicates"}] if predicates else [{"name": "nodeorder"}]
    return {
        "actions": "enqueue, allocate, backfill",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}]},
            {"plugins": [second[0], plugin]},
        ],
    }


def vgpu(**more):
    return {
        "deviceshare.VGPUEnable": True,
        "deviceshare.SchedulePolicy": "binpack",
        "deviceshare.ScheduleWeight": 10,
        **more,
    }


def fields(errors):
    return [e.field for e in errors]


def test_the_recommended_vgpu_arguments_pass():
    assert ds.deviceshare_errors(conf(vgpu())) == []
    assert argument_errors(conf(vgpu())) == []


def test_no_deviceshare_or_no_arguments_is_nothing_to_check():
    assert ds.deviceshare_errors(build_scheduler_conf()) == []
    assert ds.deviceshare_errors(conf()) == []
    assert ds.deviceshare_errors({"tiers": "junk"}) == []


@pytest.mark.parametrize("old", ["deviceshare.GPUSharingEnable", "deviceshare.GPUNumberEnable"])
@pytest.mark.parametrize("true", [True, "true", "1", "T"])
def test_vgpu_with_the_old_gpu_sharing_is_fatal(old, true):
    errors = ds.deviceshare_errors(conf(vgpu(**{old: true})))
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.VGPUEnable"]
    message = errors[0].message
    assert "gpu-share and vgpu can't be used together" in message
    assert "pkg/scheduler/plugins/deviceshare/deviceshare.go" in message
    assert old in message
    assert "rule deviceshare-one-sharing-mode" in message


def test_gpu_sharing_with_gpu_number_is_fatal():
    errors = ds.deviceshare_errors(
        conf({"deviceshare.GPUSharingEnable": True, "deviceshare.GPUNumberEnable": True})
    )
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.GPUNumberEnable"]
    assert "can not define true in both gpu sharing and gpu number" in errors[0].message


@pytest.mark.parametrize("false", [False, "false", "0", "F", None, "maybe"])
def test_an_old_mode_that_is_false_or_ignored_is_fine(false):
    assert ds.deviceshare_errors(conf(vgpu(**{"deviceshare.GPUSharingEnable": false}))) == []


@given(
    st.sampled_from([True, False, "true", "false", "1", "0", "T", "F", "yes", 3]),
    st.sampled_from([True, False, "true", "false", "1", "0", "T", "F", "yes", 3]),
    st.sampled_from([True, False, "true", "false", "1", "0", "T", "F", "yes", 3]),
)
def test_fatal_exactly_when_volcano_s_own_checks_are(sharing, number, vgpu_on):
    """Invariant: the sharing-mode rule reports exactly the combinations that make
    deviceshare.go's enablePredicate call klog.Fatal, reading the values as GetBool does
    (a YAML boolean or a strconv.ParseBool string; anything else leaves the default false)."""

    def get_bool(value):
        if isinstance(value, bool):
            return value
        return {"1": True, "T": True, "true": True, "0": False, "F": False, "false": False}.get(
            value, False
        )

    arguments = {
        "deviceshare.GPUSharingEnable": sharing,
        "deviceshare.GPUNumberEnable": number,
        "deviceshare.VGPUEnable": vgpu_on,
    }
    s, n, g = get_bool(sharing), get_bool(number), get_bool(vgpu_on)
    fatal = (s and n) or ((s or n) and g)
    assert bool(ds.sharing_mode_errors("f", arguments)) == fatal


def test_the_fatal_checks_are_still_in_the_source():
    source = VOLCANO / "pkg/scheduler/plugins/deviceshare/deviceshare.go"
    if not source.is_file():
        pytest.skip("Volcano 1.15.1 source not present")
    text = source.read_text()
    assert 'klog.Fatal("gpu-share and vgpu can\'t be used together")' in text
    assert 'klog.Fatal("can not define true in both gpu sharing and gpu number")' in text
    assert "(gpushare.GpuSharingEnable || gpushare.GpuNumberEnable) && vgpu.VGPUEnable" in text


def test_the_catalog_lists_every_argument_the_source_reads():
    plugin_dir = VOLCANO / "pkg/scheduler/plugins/deviceshare"
    if not plugin_dir.is_dir():
        pytest.skip("Volcano 1.15.1 source not present")
    read = set()
    for path in plugin_dir.glob("*.go"):
        if not path.name.endswith("_test.go"):
            read |= set(re.findall(r'"(deviceshare\.\w+)"', path.read_text()))
    assert read == set(vc.PLUGIN_ARGUMENTS["deviceshare"])


def test_the_policies_are_the_source_s():
    source = VOLCANO / "pkg/scheduler/api/devices/nvidia/vgpu/type.go"
    if not source.is_file():
        pytest.skip("Volcano 1.15.1 source not present")
    text = source.read_text()
    for policy in ds.SCHEDULE_POLICIES:
        assert f'= "{policy}"' in text


@pytest.mark.parametrize(("policy", "hint"), [("Binpack", "did you mean 'binpack'"), ("pack", "")])
def test_an_unknown_policy_is_reported(policy, hint):
    errors = ds.deviceshare_errors(conf(vgpu(**{"deviceshare.SchedulePolicy": policy})))
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.SchedulePolicy"]
    assert hint in errors[0].message
    assert "rule deviceshare-schedule-policy" in errors[0].message


@pytest.mark.parametrize("policy", ["binpack", "spread"])
def test_a_policy_without_a_weight_scores_no_node(policy):
    arguments = vgpu(**{"deviceshare.SchedulePolicy": policy})
    del arguments["deviceshare.ScheduleWeight"]
    errors = ds.deviceshare_errors(conf(arguments))
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.SchedulePolicy"]
    assert "rule deviceshare-policy-weight" in errors[0].message
    zero = ds.deviceshare_errors(conf(vgpu(**{"deviceshare.ScheduleWeight": 0})))
    assert fields(zero) == [f"{FIELD}.arguments.deviceshare.SchedulePolicy"]


def test_a_weight_without_a_policy_scores_nothing_for_vgpu():
    arguments = vgpu()
    del arguments["deviceshare.SchedulePolicy"]
    errors = ds.deviceshare_errors(conf(arguments))
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.ScheduleWeight"]


def test_node_order_off_drops_the_weight():
    errors = ds.deviceshare_errors(conf(vgpu(), enableNodeOrder=False))
    assert fields(errors) == [f"{FIELD}.enableNodeOrder"]


def test_a_quoted_weight_is_left_to_known_arguments():
    """The type of ScheduleWeight is rule known-arguments' (GetInt ignores a quoted value);
    deviceshare_errors does not report it a second time."""
    quoted = conf(vgpu(**{"deviceshare.ScheduleWeight": "10"}))
    assert ds.deviceshare_errors(quoted) == []
    (error,) = argument_errors(quoted)
    assert error.field == f"{FIELD}.arguments.deviceshare.ScheduleWeight"


def test_exclusive_rules_well_formed():
    rules = [{"team": "a"}, {"app": "infer", "tier": "gold"}]
    assert ds.deviceshare_errors(conf(vgpu(**{"deviceshare.GPUExclusiveRules": rules}))) == []


@pytest.mark.parametrize(
    ("rules", "field"),
    [
        ({"team": "a"}, ""),
        ([{"team": 1}], "[0]"),
        (["team=a"], "[0]"),
        ([{"team": "a"}, {}], "[1]"),
    ],
)
def test_exclusive_rules_volcano_would_drop(rules, field):
    errors = ds.deviceshare_errors(conf(vgpu(**{"deviceshare.GPUExclusiveRules": rules})))
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.GPUExclusiveRules{field}"]
    assert "rule deviceshare-exclusive-rules" in errors[0].message


def test_exclusive_rules_need_vgpu():
    errors = ds.deviceshare_errors(
        conf({"deviceshare.GPUSharingEnable": True, "deviceshare.GPUExclusiveRules": [{"a": "b"}]})
    )
    assert fields(errors) == [f"{FIELD}.arguments.deviceshare.GPUExclusiveRules"]
    assert "VGPUEnable" in errors[0].message


def test_sharing_needs_the_predicates_plugin():
    errors = ds.deviceshare_errors(conf(vgpu(), predicates=False))
    assert fields(errors) == ["tiers"]
    assert "predicates" in errors[0].message
    assert "rule deviceshare-needs-predicates" in errors[0].message


def test_sharing_keeps_deviceshare_s_predicate():
    errors = ds.deviceshare_errors(conf(vgpu(), enablePredicate=False))
    assert fields(errors) == [f"{FIELD}.enablePredicate"]


def test_the_default_configuration_with_vgpu_added_passes_every_rule():
    tiers = [dict(t) for t in DEFAULT_TIERS]
    last = dict(tiers[-1])
    last["plugins"] = [*last["plugins"], {"name": "deviceshare", "arguments": vgpu()}]
    tiers[-1] = last
    built = build_scheduler_conf(tiers=tiers)
    assert ds.deviceshare_errors(built) == []
    assert scheduler_conf_errors(built) == []
