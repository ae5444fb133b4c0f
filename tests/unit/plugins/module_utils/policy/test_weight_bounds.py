# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule weight-bounds: every weight argument is an integer from 0 to WEIGHT_MAX."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.policy import volcano_catalog as vc
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_builder import (
    build_scheduler_conf,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    numeric_weight_errors,
    scheduler_conf_errors,
    weight_bound_errors,
)


def default():
    return copy.deepcopy(build_scheduler_conf())


def arguments(conf, name):
    for tier in conf["tiers"]:
        for plugin in tier["plugins"]:
            if plugin["name"] == name:
                return plugin.setdefault("arguments", {})
    raise KeyError(name)


def test_the_default_configuration_is_within_bounds():
    assert weight_bound_errors(default()) == []


@pytest.mark.parametrize(
    ("plugin", "key", "field"),
    [
        (
            "network-topology-aware",
            "weight",
            "tiers[2].plugins[4](network-topology-aware).arguments.weight",
        ),
        ("binpack", "binpack.weight", "tiers[2].plugins[3](binpack).arguments.binpack.weight"),
        ("binpack", "binpack.cpu", "tiers[2].plugins[3](binpack).arguments.binpack.cpu"),
        (
            "binpack",
            "binpack.resources.nvidia.com/gpu",
            "tiers[2].plugins[3](binpack).arguments.binpack.resources.nvidia.com/gpu",
        ),
        (
            "nodeorder",
            "leastrequested.weight",
            "tiers[2].plugins[2](nodeorder).arguments.leastrequested.weight",
        ),
    ],
)
@pytest.mark.parametrize("value", [-1, 101, 10**12])
def test_a_weight_out_of_bounds_is_refused_naming_the_argument(plugin, key, field, value):
    conf = default()
    arguments(conf, plugin)[key] = value
    (error,) = weight_bound_errors(conf)
    assert error.field == field
    assert f"weight {key} is {value}; a weight is an integer from 0 to 100" in error.message
    assert str(error) in [str(e) for e in scheduler_conf_errors(conf)]


@given(st.integers(min_value=vc.WEIGHT_MIN, max_value=vc.WEIGHT_MAX))
def test_every_weight_in_bounds_passes(value):
    conf = default()
    arguments(conf, "network-topology-aware")["weight"] = value
    arguments(conf, "nodeorder")["podaffinity.weight"] = value
    arguments(conf, "binpack")["binpack.memory"] = value
    assert scheduler_conf_errors(conf) == []


@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=vc.WEIGHT_MAX + 1)))
def test_every_weight_out_of_bounds_is_refused(value):
    conf = default()
    arguments(conf, "nodeorder")["mostrequested.weight"] = value
    assert len(weight_bound_errors(conf)) == 1


def test_a_non_weight_integer_is_not_bounded():
    conf = default()
    arguments(conf, "network-topology-aware")["hypernode.gradient.evict.max-hypernodes"] = 1000
    assert weight_bound_errors(conf) == []


def test_a_quoted_weight_is_numeric_weights_error_not_this_rules():
    conf = default()
    arguments(conf, "binpack")["binpack.weight"] = "1000"
    assert weight_bound_errors(conf) == []
    assert len(numeric_weight_errors(conf)) == 1


def test_every_weight_argument_is_an_integer_argument_of_its_plugin():
    for plugin, keys in vc.WEIGHT_ARGUMENTS.items():
        for key in keys:
            assert vc.PLUGIN_ARGUMENTS[plugin][key] == vc.INT, (plugin, key)
    for plugin, prefixes in vc.WEIGHT_PREFIXES.items():
        for prefix in prefixes:
            assert vc.ARGUMENT_PREFIXES[plugin][prefix][0] == vc.INT
