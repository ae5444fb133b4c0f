# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.policy import volcano_catalog as vc
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    DEFAULT_ACTIONS,
    DEFAULT_TIERS,
    build_scheduler_conf,
    render_scheduler_conf,
    scheduler_configmap,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    action_errors,
    numeric_weight_errors,
    plugin_name_errors,
    scheduler_conf_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_tier_rules import (
    deciding_tier,
    sla_enqueue_only_errors,
)

DESIGN = (Path(__file__).parent / "data" / "design_scheduler.conf").read_text()


def default() -> dict:
    return copy.deepcopy(build_scheduler_conf())


def errors_of(conf, platform_policy=True) -> list[str]:
    return [str(e) for e in scheduler_conf_errors(conf, platform_policy=platform_policy)]


def plugin(conf: dict, tier: int, name: str) -> dict:
    return next(p for p in conf["tiers"][tier]["plugins"] if p["name"] == name)


def test_default_configuration_has_no_errors():
    text = render_scheduler_conf()
    assert scheduler_conf_errors(text) == []
    assert scheduler_conf_errors(default()) == []


def test_default_configuration_puts_capacity_in_the_deciding_tier():
    conf = yaml.safe_load(render_scheduler_conf())
    assert conf["tiers"][0]["plugins"] == [
        {"name": "sla", "enableJobOrder": False, "enableJobPipelined": False}
    ]
    deciding = [p["name"] for p in conf["tiers"][1]["plugins"]]
    assert deciding == ["priority", "gang", "conformance", "capacity"]
    assert plugin(conf, 1, "capacity")["enableHierarchy"] is True
    assert deciding_tier(conf) == 1


def test_default_actions_are_known_and_include_whole_job_eviction():
    conf = yaml.safe_load(render_scheduler_conf())
    actions = [a.strip() for a in conf["actions"].split(",")]
    assert set(actions) <= set(vc.ACTIONS)
    assert actions.index("gangpreempt") > actions.index("allocate")
    assert "gangreclaim" in actions and actions[-1] == "backfill"


def test_default_binpack_is_weighted_to_gpus():
    binpack = plugin(yaml.safe_load(render_scheduler_conf()), 2, "binpack")["arguments"]
    assert binpack["binpack.resources"] == "nvidia.com/gpu"
    assert (
        binpack["binpack.resources.nvidia.com/gpu"]
        > binpack["binpack.cpu"]
        > binpack["binpack.memory"]
    )


def test_design_configmap_reports_its_real_problems():
    errors = errors_of(DESIGN)
    joined = "\n".join(errors)
    assert any(
        "tiers[0].plugins[1](gang)" in e
        and "gang.scheduling.io/max-scheduling-delay" in e
        and "not read" in e
        for e in errors
    )
    assert any(
        "tiers[1].plugins[2](capacity)" in e and "tier 0" in e and "5896" in e for e in errors
    )
    assert any("binpack.resources.cpu" in e and "binpack.cpu" in e for e in errors)
    assert any("binpack.resources.memory" in e and "binpack.memory" in e for e in errors)
    assert any("tiers[1].plugins[0](drf).enablePreemptable" in e for e in errors)
    assert any(e.startswith("actions[2]") and "gangpreempt" in e for e in errors)
    assert any(e.startswith("actions[3]") and "gangreclaim" in e for e in errors)
    assert any(e.startswith("tiers:") and "no 'sla' plugin" in e for e in errors)
    assert any("(capacity).arguments.ancestorReclaimLevel: is 0" in e for e in errors)
    # what the design gets right is not reported
    assert "network-topology-aware" not in joined
    assert "binpack.weight" not in joined
    assert "enableHierarchy" not in joined
    assert len(errors) == 9


def test_design_configmap_volcano_rules_only():
    errors = errors_of(DESIGN, platform_policy=False)
    assert not any(e.startswith("actions[") for e in errors)
    assert len(errors) == 5


# -- bad configurations: (mutation, fragments the one error must contain) ----------


def _set(tier, name, key, value):
    def mutate(conf):
        plugin(conf, tier, name)[key] = value

    return mutate


def _arg(tier, name, key, value):
    def mutate(conf):
        plugin(conf, tier, name).setdefault("arguments", {})[key] = value

    return mutate


def _actions(text):
    def mutate(conf):
        conf["actions"] = text

    return mutate


def _append(tier, entry):
    def mutate(conf):
        conf["tiers"][tier]["plugins"].append(entry)

    return mutate


def _move_capacity_to_tier_1(conf):
    cap = plugin(conf, 1, "capacity")
    conf["tiers"][1]["plugins"].remove(cap)
    conf["tiers"][2]["plugins"].insert(0, cap)


def _capacity_alone_before(conf):
    cap = plugin(conf, 1, "capacity")
    conf["tiers"][1]["plugins"].remove(cap)
    conf["tiers"].insert(1, {"plugins": [cap]})


BAD = {
    "unknown action": (
        _actions("enqueue, allocate, preemt, gangpreempt, reclaim, gangreclaim, backfill"),
        ["actions[2]", "'preemt'", "did you mean 'preempt'"],
    ),
    "empty action": (_actions("enqueue, allocate, backfill,"), ["actions[3]", "''"]),
    "duplicate action": (
        _actions("enqueue, allocate, allocate, backfill"),
        ["actions[2]", "twice"],
    ),
    "unknown plugin": (
        _append(2, {"name": "topology"}),
        ["tiers[2].plugins[6](topology).name", "tier 2"],
    ),
    "misspelt plugin": (
        _append(2, {"name": "network-topology"}),
        ["tiers[2].plugins[6]", "did you mean 'network-topology-aware'"],
    ),
    "duplicate plugin": (
        _append(2, {"name": "predicates"}),
        ["tiers[2].plugins[6](predicates)", "already configured in tier 2"],
    ),
    "enabledPreemptable spelling": (
        _set(1, "gang", "enabledPreemptable", False),
        ["tiers[1].plugins[1](gang).enabledPreemptable", "did you mean 'enablePreemptable'"],
    ),
    "enableVictim spelling": (
        _set(2, "predicates", "enableVictim", True),
        ["tiers[2].plugins[1](predicates).enableVictim", "did you mean 'enabledVictim'"],
    ),
    "enableClusterOrder spelling": (
        _set(2, "nodeorder", "enableClusterOrder", True),
        ["tiers[2].plugins[2](nodeorder).enableClusterOrder", "'EnabledClusterOrder'"],
    ),
    "argument at option level": (
        _set(2, "network-topology-aware", "weight", 10),
        ["tiers[2].plugins[4](network-topology-aware).weight", "under 'arguments'"],
    ),
    "option not boolean": (
        _set(1, "capacity", "enableReclaimable", "yes"),
        ["tiers[1].plugins[3](capacity).enableReclaimable", "true or false"],
    ),
    "gang argument": (
        _arg(1, "gang", "gang.scheduling.io/max-scheduling-delay", "120s"),
        ["tiers[1].plugins[1](gang).arguments.gang.scheduling.io/max-scheduling-delay", "none"],
    ),
    "misspelt binpack argument": (
        _arg(2, "binpack", "binpack.weigth", 3),
        ["tiers[2].plugins[3](binpack).arguments.binpack.weigth", "did you mean 'binpack.weight'"],
    ),
    "unlisted binpack resource": (
        _arg(2, "binpack", "binpack.resources.example.com/fpga", 4),
        ["binpack.resources.example.com/fpga", "not listed in binpack.resources"],
    ),
    "quoted binpack weight": (
        _arg(2, "binpack", "binpack.weight", "10"),
        ["tiers[2].plugins[3](binpack).arguments.binpack.weight", "YAML integer"],
    ),
    "float binpack resource weight": (
        _arg(2, "binpack", "binpack.resources.nvidia.com/gpu", 2.5),
        ["binpack.resources.nvidia.com/gpu", "YAML integer"],
    ),
    "boolean nodeorder weight": (
        _arg(2, "nodeorder", "mostrequested.weight", True),
        ["tiers[2].plugins[2](nodeorder).arguments.mostrequested.weight", "YAML integer"],
    ),
    "string topology weight": (
        _arg(2, "network-topology-aware", "weight", "high"),
        ["tiers[2].plugins[4](network-topology-aware).arguments.weight", "YAML integer"],
    ),
    "unread predicates DRA key": (
        _arg(2, "predicates", "predicate.DynamicResourceAllocationEnable", True),
        [
            "tiers[2].plugins[1](predicates).arguments.predicate.DynamicResourceAllocationEnable",
            "not read",
        ],
    ),
    "predicate not boolean": (
        _arg(2, "predicates", "predicate.CacheEnable", "maybe"),
        ["predicate.CacheEnable", "true or false"],
    ),
    "capacity with proportion": (
        _append(2, {"name": "proportion"}),
        ["tiers[2].plugins[6](proportion).name", "capacity' in tier 1"],
    ),
    "hierarchy on drf": (
        _set(2, "drf", "enableHierarchy", True),
        ["tiers[2].plugins[0](drf).enableHierarchy", "only on capacity and nodegroup"],
    ),
    "capacity after deciding tier": (
        _move_capacity_to_tier_1,
        ["tiers[2].plugins[0](capacity)", "after tier 1", "5896"],
    ),
    "capacity before deciding tier": (
        _capacity_alone_before,
        ["tiers[1].plugins[0](capacity)", "before tier 2"],
    ),
    "capacity reclaim filter off": (
        _set(1, "capacity", "enableReclaimable", False),
        ["tiers[1].plugins[3](capacity).enableReclaimable"],
    ),
    "drf preemptable left on": (
        _set(2, "drf", "enablePreemptable", True),
        ["tiers[2].plugins[0](drf).enablePreemptable", "ignoring priority"],
    ),
    "capacity without hierarchy": (
        _set(1, "capacity", "enableHierarchy", False),
        ["tiers[1].plugins[3](capacity).enableHierarchy", "true"],
    ),
    "unknown action configuration": (
        lambda c: c.update(
            configurations=[{"name": "preempt", "arguments": {"enableTopologyAware": True}}]
        ),
        ["configurations[0](preempt).arguments.enableTopologyAware"],
    ),
    "unknown top-level key": (lambda c: c.update(plugins=[]), ["plugins: ", "actions, tiers"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_configuration_names_tier_plugin_and_key(case):
    mutate, fragments = BAD[case]
    conf = default()
    mutate(conf)
    errors = errors_of(conf)
    matching = [e for e in errors if fragments[0] in e]
    assert len(matching) == 1, errors
    for fragment in fragments:
        assert fragment in matching[0], (fragment, matching[0])
    # a fix-one-thing mutation breaks at most one further rule (proportion and hdrf also reclaim)
    assert len(errors) <= 2, errors
    # the same problem is found in the rendered YAML text
    assert errors_of(yaml.safe_dump(conf, sort_keys=False)) == errors


def _sla(conf) -> dict:
    return conf["tiers"][0]["plugins"][0]


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (lambda c: _sla(c).pop("enableJobPipelined"), ["(sla).enableJobPipelined", "commit"]),
        (lambda c: _sla(c).update(enableJobOrder=True), ["(sla).enableJobOrder", "higher"]),
        (lambda c: c["tiers"].pop(0), ["tiers: has no 'sla' plugin", "never"]),
        (
            lambda c: (c["tiers"].pop(0), c["tiers"][1]["plugins"].append({"name": "sla"})),
            ["tiers[1].plugins[6](sla).name", "has 'sla' in tier 1", "tier 0"],
        ),
        (
            lambda c: _sla(c).update(arguments={"sla-waiting-time": "1m"}),
            ["(sla).arguments.sla-waiting-time", "debug"],
        ),
    ],
    ids=["pipelined on", "job order on", "no sla", "sla after capacity", "global waiting time"],
)
def test_sla_rules_name_the_option_and_why(mutate, fragments):
    """Rules sla-enqueue-only and sla-before-capacity."""
    _one_error_with(mutate, fragments)


@pytest.mark.parametrize("level", [0, None])
def test_reclaim_must_check_the_victims_parent(level):
    """Rule tenant-ancestor-reclaim."""

    def mutate(conf):
        arguments = plugin(conf, 1, "capacity")["arguments"]
        if level is None:
            arguments.pop("ancestorReclaimLevel")
        else:
            arguments["ancestorReclaimLevel"] = level

    _one_error_with(mutate, ["(capacity).arguments.ancestorReclaimLevel", "another tenant"])


def _one_error_with(mutate, fragments):
    conf = default()
    mutate(conf)
    errors = errors_of(conf)
    assert len(errors) == 1, errors
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])


def test_sla_in_the_tier_of_gang_and_priority_needs_no_options():
    """In the deciding tier gang's reject ends the vote and priority orders first."""
    conf = default()
    conf["tiers"].pop(0)
    conf["tiers"][0]["plugins"].append({"name": "sla"})
    assert sla_enqueue_only_errors(conf) == []


def test_at_least_fifteen_bad_configurations():
    assert len(BAD) >= 15


def test_preempt_without_gangpreempt_is_reported_as_platform_rule():
    conf = default()
    conf["actions"] = "enqueue, allocate, preempt, reclaim, gangreclaim, backfill"
    errors = errors_of(conf)
    assert len(errors) == 1 and errors[0].startswith("actions[2]") and "gangpreempt" in errors[0]
    assert errors_of(conf, platform_policy=False) == []


@pytest.mark.parametrize("text", ["actions: [", "- just a list", ""])
def test_unparseable_text_is_one_error(text):
    errors = errors_of(text)
    assert len(errors) == 1 and errors[0].startswith("volcano-scheduler.conf")


def test_missing_tiers_and_actions():
    errors = errors_of({"actions": 3}, platform_policy=False)
    assert any(e.startswith("actions:") for e in errors)
    assert any(e.startswith("tiers:") for e in errors)


def test_every_plugin_in_the_catalog_has_an_argument_table():
    assert set(vc.PLUGINS) == set(vc.PLUGIN_ARGUMENTS)
    assert set(vc.ACTIONS) == set(vc.ACTION_ARGUMENTS)
    assert "enablePreemptable" in vc.PLUGIN_OPTION_KEYS and "enabledVictim" in vc.PLUGIN_OPTION_KEYS


@given(st.lists(st.sampled_from(vc.ACTIONS), min_size=1, unique=True))
def test_any_set_of_known_actions_passes_the_action_rule(actions):
    assert action_errors({"actions": ", ".join(actions)}) == []


@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20).filter(
        lambda s: s not in vc.PLUGINS
    )
)
def test_any_unknown_plugin_name_is_reported_with_its_tier(name):
    conf = default()
    conf["tiers"][2]["plugins"].append({"name": name})
    errors = [str(e) for e in plugin_name_errors(conf)]
    assert len(errors) == 1 and f"tiers[2].plugins[6]({name})" in errors[0]


@given(st.one_of(st.text(max_size=5), st.floats(allow_nan=False), st.booleans()))
def test_weights_must_be_integers(value):
    conf = default()
    plugin(conf, 2, "binpack")["arguments"]["binpack.weight"] = value
    errors = numeric_weight_errors(conf)
    assert len(errors) == 1 and "binpack.weight" in errors[0].field


@given(st.integers(min_value=0, max_value=100))
def test_integer_weights_pass(value):
    conf = default()
    plugin(conf, 2, "binpack")["arguments"]["binpack.weight"] = value
    plugin(conf, 2, "nodeorder")["arguments"]["podaffinity.weight"] = value
    assert scheduler_conf_errors(conf) == []


def test_render_round_trips_structured_variables():
    text = render_scheduler_conf(
        actions=["enqueue", "allocate", "backfill"],
        tiers=[{"plugins": [{"name": "priority"}]}],
        configurations=[{"name": "allocate", "arguments": {"predicateErrorCacheEnable": False}}],
    )
    data = yaml.safe_load(text)
    assert data == {
        "actions": "enqueue, allocate, backfill",
        "tiers": [{"plugins": [{"name": "priority"}]}],
        "configurations": [{"name": "allocate", "arguments": {"predicateErrorCacheEnable": False}}],
    }


def test_scheduler_configmap_is_the_charts():
    cm = scheduler_configmap("actions: allocate\n")
    assert cm["metadata"]["name"] == "volcano-scheduler-configmap"
    assert cm["metadata"]["namespace"] == "volcano-system"
    assert cm["data"] == {"volcano-scheduler.conf": "actions: allocate\n"}


def test_the_role_defaults_are_the_builder_defaults():
    """roles/scheduling_policy writes its own tiers and actions; they must be the policy."""
    role = Path(__file__).resolve().parents[5] / "roles/scheduling_policy/defaults/main.yml"
    defaults = yaml.safe_load(role.read_text())
    assert defaults["scheduling_policy_tiers"] == [dict(t) for t in DEFAULT_TIERS]
    assert defaults["scheduling_policy_actions"] == list(DEFAULT_ACTIONS)
