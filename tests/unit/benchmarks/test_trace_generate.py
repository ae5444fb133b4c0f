# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trace generator (benchmarks/traces/generate.py): every day it makes passes the trace
rules, the same parameters make the same day, other seeds another; the day is tidal, its
sizes heavy-tailed, and it asks what ``load`` says."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.benchmarks.traces import load as trace_load
from ansible_collections.gpucloud.platform.benchmarks.traces.generate import (
    Params,
    bounded_pareto,
    generate,
    job_size,
)
from ansible_collections.gpucloud.platform.benchmarks.traces.summary import (
    asked_by_hour,
    gpu_hours,
    paragraph,
)
from ansible_collections.gpucloud.platform.benchmarks.traces.validate import trace_errors
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)

VARIABLES = trace_load.playbook_variables()

params_st = st.builds(
    Params,
    seed=st.integers(min_value=0, max_value=2**64),
    jobs=st.integers(min_value=0, max_value=400),
    gpus=st.integers(min_value=1, max_value=40).map(lambda nodes: 8 * nodes),
    tenants=st.integers(min_value=1, max_value=12),
    day_seconds=st.integers(min_value=60, max_value=86_400),
    load=st.floats(min_value=0.05, max_value=4.0),
)


@settings(max_examples=40, deadline=None)
@given(params=params_st)
def test_every_generated_day_passes_the_trace_rules(params):
    trace = generate(params)
    assert trace_errors(trace.as_mapping(), VARIABLES) == []
    assert len(trace.jobs) == params.jobs
    assert trace.cluster.gpus() == params.gpus
    assert len(trace.tenants) + sum(e.action == "create" for e in trace.events) == params.tenants
    assert all(1 <= j.gpus <= min(64, params.gpus) for j in trace.jobs)
    assert all(0 <= j.at < params.day_seconds for j in trace.jobs)
    assert all(1 <= j.duration_s <= params.day_seconds for j in trace.jobs)


@settings(max_examples=20, deadline=None)
@given(params=params_st)
def test_the_same_parameters_make_the_same_day(params):
    first = generate(params)
    random.seed(12345)  # no global state is read
    assert generate(params) == first
    assert trace_load.dump(generate(params)) == trace_load.dump(first)


@settings(max_examples=20, deadline=None)
@given(params=params_st, other=st.integers(min_value=0, max_value=2**64))
def test_another_seed_makes_another_day(params, other):
    assume(other != params.seed and params.jobs >= 10)
    assert generate(params).jobs != generate(replace(params, seed=other)).jobs


def test_a_day_is_tidal_heavy_tailed_and_asks_its_load():
    trace = generate(Params(seed=7, jobs=2000, gpus=128))
    by_hour = {
        cls: Counter(int(j.at // 3600) for j in trace.jobs if j.job_class == cls)
        for cls in ("debug", "large")
    }
    day, night = range(8, 20), (*range(20, 24), *range(6))
    assert sum(by_hour["debug"][h] for h in day) > 0.95 * sum(by_hour["debug"].values())
    assert sum(by_hour["large"][h] for h in night) == sum(by_hour["large"].values()) > 0
    sizes = Counter(j.gpus for j in trace.jobs)
    assert min(sizes) == 1 and max(sizes) == 64
    assert sizes[1] > len(trace.jobs) / 2
    big = [j for j in trace.jobs if j.gpus >= 8]
    assert len(big) < 0.1 * len(trace.jobs) and gpu_hours(big) > 0.5 * gpu_hours(trace.jobs)
    assert gpu_hours(trace.jobs) == pytest.approx(128 * 24, rel=0.01)
    held = asked_by_hour(trace.jobs, 3600)
    assert max(range(24), key=held.__getitem__) in night
    assert {e.action for e in trace.events} == {"create", "update"}
    assert all(9 * 3600 <= e.at <= 17 * 3600 for e in trace.events)
    assert Counter(j.billing for j in trace.jobs).keys() == {"subscription", "payg", "spot"}
    assert Counter(j.job_class for j in trace.jobs).keys() == {
        "critical",
        "large",
        "normal",
        "debug",
        "spot",
    }


def test_the_summary_says_what_the_day_asks():
    text = paragraph(generate(Params(seed=7, jobs=300, gpus=64, tenants=3)))
    assert text.startswith(
        "300 jobs over a day of 86400 s on 64 GPUs (8 nodes, 64 GPUs in the IDC)"
    )
    for words in (
        "Jobs by billing type (and class): subscription",
        "times the cluster's 1,536 over the day",
        "Busiest hour: ",
    ):
        assert words in text


def test_sizes_are_job_shapes_from_a_bounded_pareto():
    rng = random.Random(1)
    draws = [bounded_pareto(rng, 0.8, 1, 72) for _draw in range(5000)]
    assert all(1 <= x <= 72 for x in draws)
    assert [job_size(x) for x in (1, 1.9, 2, 3.99, 4, 7.9, 8, 15.9, 16, 71.9)] == [
        1,
        1,
        2,
        2,
        4,
        4,
        8,
        8,
        16,
        64,
    ]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (Params(gpus=100), "gpus: 100 must be a multiple of 8 (GPUs a node), 8 or more"),
        (Params(tenants=0), "tenants: 0 must be at least 1"),
        (Params(load=0), "load: 0 must be a number above 0"),
    ],
)
def test_what_the_generator_cannot_make_is_refused(params, words):
    with pytest.raises(PlatformValidationError, match="rule trace-generate-params") as caught:
        generate(params)
    assert words in str(caught.value)
