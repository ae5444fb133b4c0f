# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.filter import (
    spot_capacities as capacities_plugin,
)
from ansible_collections.gpucloud.platform.plugins.filter import spot_victims as victims_plugin
from ansible_collections.gpucloud.platform.plugins.filter.spot_capacities import spot_capacities
from ansible_collections.gpucloud.platform.plugins.filter.spot_victims import spot_victims


def design_jobs():
    return [
        {
            "name": "spot-a",
            "namespace": "t",
            "price": 0.1,
            "gpus": 4,
            "replicas": 1,
            "started_at": "2026-01-01T11:50:00Z",
        },
        {
            "name": "spot-b",
            "namespace": "t",
            "price": 0.1,
            "gpus": 8,
            "replicas": 2,
            "started_at": "2026-01-01T10:00:00Z",
        },
        {
            "name": "spot-c",
            "namespace": "t",
            "price": 0.3,
            "gpus": 4,
            "replicas": 1,
            "started_at": "2026-01-01T11:30:00Z",
        },
        {
            "name": "spot-d",
            "namespace": "t",
            "price": 0.5,
            "gpus": 8,
            "replicas": 2,
            "started_at": "2026-01-01T11:00:00Z",
        },
    ]


def test_filters_are_registered():
    assert capacities_plugin.FilterModule().filters()["spot_capacities"] is spot_capacities
    assert victims_plugin.FilterModule().filters()["spot_victims"] is spot_victims


def test_spot_capacities_example():
    assert spot_capacities({"alpha": 40, "beta": 20, "gamma": 10}, 100, {"delta": 5}) == {
        "alpha": 14,
        "beta": 7,
        "delta": 0,
        "gamma": 4,
    }
    assert spot_capacities({"a": 10}, 5, {"a": 1}) == {"a": 0}  # oversold: idle is 0


@given(
    subs=st.dictionaries(st.text("xyz", min_size=1, max_size=3), st.integers(0, 100), max_size=12),
    cluster=st.integers(0, 3000),
    payg=st.dictionaries(st.text("xyz", min_size=1, max_size=3), st.integers(0, 50), max_size=5),
)
def test_spot_capacities_add_up_to_idle(subs, cluster, payg):
    got = spot_capacities(subs, cluster, payg)
    idle = max(0, cluster - sum(subs.values()) - sum(payg.values()))
    assert sum(got.values()) == (idle if sum(subs.values()) else 0)
    assert set(got) == set(subs) | set(payg)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (({"a": -1}, 10, {}), r"subscriptions\.a: -1 is negative"),
        (({"a": "x"}, 10, {}), r"subscriptions\.a: 'x' is not a whole number"),
        (({"a": 1}, -1, {}), r"cluster_gpus: -1 is negative"),
        (({"a": 1}, "ten", {}), r"cluster_gpus: 'ten' is not a whole number"),
        (({"a": 1}, 10, {"b": 1.5}), r"payg_used\.b: 1.5 is not a whole number"),
        (([1], 10, {}), r"subscriptions: \[1\] must be a mapping"),
    ],
)
def test_spot_capacities_bad_input(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        spot_capacities(*args)


def test_spot_victims_design_example_returns_input_maps_in_order():
    jobs = design_jobs()
    chosen = spot_victims(jobs, 12)
    assert [j["name"] for j in chosen] == ["spot-a", "spot-b"]
    assert chosen[0] is jobs[0]


def test_spot_victims_missing_price_counts_as_zero():
    jobs = design_jobs()
    del jobs[3]["price"]
    assert [j["name"] for j in spot_victims(jobs, 8)] == ["spot-d"]


def test_spot_victims_partial():
    with pytest.raises(
        AnsibleFilterError, match=r"need: 25 GPUs cannot be freed: the 4 spot jobs hold 24 GPUs"
    ):
        spot_victims(design_jobs(), 25)
    assert len(spot_victims(design_jobs(), 25, allow_partial=True)) == 4


@pytest.mark.parametrize(
    ("change", "need", "message"),
    [
        ({}, -1, r"need: -1 is less than 0"),
        ({"price": "cheap"}, 1, r"jobs\[0\]\.price: 'cheap' is not a number"),
        ({"price": [1]}, 1, r"jobs\[0\]\.price: \[1\] is not a number"),
        (
            {"started_at": "10 minutes ago"},
            1,
            r"jobs\[0\]\.started_at: '10 minutes ago' is not an RFC 3339 time",
        ),
        ({"started_at": "2026-01-01T11:50:00"}, 1, r"jobs\[0\]\.started_at: .* has no time zone"),
        ({"gpus": "four"}, 1, r"jobs\[0\]\.gpus: 'four' is not a whole number"),
        ({"replicas": 0}, 1, r"jobs\[0\]\.replicas: 0 is less than 1"),
        ({"name": ""}, 1, r"jobs\[0\]\.name: '' must be a non-empty string"),
    ],
)
def test_spot_victims_bad_input(change, need, message):
    jobs = design_jobs()
    jobs[0] = {**jobs[0], **change}
    with pytest.raises(AnsibleFilterError, match=message):
        spot_victims(jobs, need)


def test_spot_victims_missing_field_and_wrong_types():
    jobs = design_jobs()
    del jobs[1]["started_at"]
    with pytest.raises(AnsibleFilterError, match=r"jobs\[1\]: missing started_at"):
        spot_victims(jobs, 1)
    with pytest.raises(AnsibleFilterError, match="must be a list"):
        spot_victims("x", 1)
    with pytest.raises(AnsibleFilterError, match="allow_partial"):
        spot_victims(design_jobs(), 1, allow_partial="yes")
