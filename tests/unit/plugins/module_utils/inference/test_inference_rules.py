# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inference/rules: each named rule of a model service, and the GPU footprint that
mirrors KServe 0.20's canary replica arithmetic (``canaryReplicaCount`` and the stable
minimum lowered by the canaries' replicas, to one at least)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.inference import rules
from ansible_collections.gpucloud.platform.plugins.module_utils.inference.spec import (
    Autoscaling,
    Canary,
    ModelVersion,
    ServiceSpec,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.inference.inference_objects import (
    canary,
    make_spec,
    model,
)


def fields(errors):
    return [e.field for e in errors]


# -- inference-default-class ------------------------------------------------------------


@pytest.mark.parametrize(
    ("queue_type", "expected"),
    [("team", "critical"), ("subscription", "critical"), ("payg", "normal"), ("spot", "normal")],
)
def test_default_class_by_queue_type(queue_type, expected):
    """Never spot: in a spot queue the default is refused, and the refusal says how."""
    assert rules.default_class(queue_type) == expected


def test_a_service_in_a_spot_queue_must_choose_spot_and_name_its_price():
    from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
        DEFAULT_CLASSES,
    )

    (refused,) = rules.class_errors("normal", "tenant-a-spot", "spot", DEFAULT_CLASSES)
    assert refused.field == "job_class" and "say job_class: spot and give spot_price" in str(
        refused
    )
    (unpriced,) = rules.spot_priced_errors("spot", None)
    assert unpriced.field == "spot_price" and "cheapest first" in str(unpriced)
    (bad,) = rules.spot_priced_errors("spot", "-1")
    assert "greater than 0" in str(bad)
    assert rules.spot_priced_errors("spot", "0.4") == []
    (stray,) = rules.spot_priced_errors("normal", "0.4")
    assert "not billed as spot" in str(stray)
    assert rules.spot_priced_errors("normal", None) == []


@pytest.mark.parametrize("queue_type", ["team", "subscription"])
def test_default_class_is_normal_where_critical_is_not_allowed(queue_type):
    assert rules.default_class(queue_type, critical_allowed=False) == "normal"


def test_the_default_class_fits_every_queue_but_spot():
    """Spot is never a default: there the default is refused, naming spot and its price."""
    for queue_type in ("team", "subscription", "payg"):
        job_class = rules.default_class(queue_type)
        assert rules.class_errors(job_class, "q", queue_type, DEFAULT_CLASSES) == []
    assert rules.class_errors(rules.default_class("spot"), "q", "spot", DEFAULT_CLASSES) != []


# -- inference-class-fits-queue ---------------------------------------------------------


def test_critical_in_a_payg_queue_is_refused_naming_the_queue_type_and_the_fitting_class():
    errors = rules.class_errors("critical", "tenant-alpha-payg", "payg", DEFAULT_CLASSES)
    assert fields(errors) == ["job_class"]
    message = errors[0].message
    assert "tenant-alpha-payg is a payg queue" in message
    assert message.endswith("use normal")


def test_normal_in_a_spot_queue_is_refused_naming_spot():
    errors = rules.class_errors("normal", "tenant-alpha-spot", "spot", DEFAULT_CLASSES)
    assert fields(errors) == ["job_class"]
    assert "tenant-alpha-spot is a spot queue" in errors[0].message
    assert "use spot (a spot service is reclaimed" in errors[0].message
    assert errors[0].message.endswith("say job_class: spot and give spot_price)")


def test_spot_in_a_team_queue_names_both_classes_that_fit():
    errors = rules.class_errors("spot", "tenant-alpha-research", "team", DEFAULT_CLASSES)
    assert errors[0].message.endswith("use critical or normal")


@pytest.mark.parametrize("job_class", ["large", "debug", "batch"])
@pytest.mark.parametrize("queue_type", ["team", "subscription", "payg", "spot"])
def test_large_and_debug_are_no_class_for_a_model_service_anywhere(job_class, queue_type):
    errors = rules.class_errors(job_class, "q", queue_type, DEFAULT_CLASSES)
    assert fields(errors) == ["job_class"]
    assert "is not a class for a model service" in errors[0].message
    assert "critical, normal, spot" in errors[0].message


@pytest.mark.parametrize(
    ("job_class", "queue_type"),
    [("critical", "team"), ("critical", "subscription"), ("normal", "payg"), ("spot", "spot")],
)
def test_fitting_classes_pass(job_class, queue_type):
    assert rules.class_errors(job_class, "q", queue_type, DEFAULT_CLASSES) == []


def test_critical_needs_the_tenants_allowance():
    errors = rules.critical_errors("critical", False, "tenant-alpha")
    assert fields(errors) == ["job_class"]
    assert "tenant-alpha" in errors[0].message
    assert rules.critical_errors("critical", True, "tenant-alpha") == []
    assert rules.critical_errors("normal", False, "tenant-alpha") == []


# -- inference-traffic ------------------------------------------------------------------


def test_traffic_over_100_shows_the_sum():
    spec = make_spec(canaries=[canary("v2", 20), canary("v3", 90)])
    errors = rules.traffic_errors(spec.canaries)
    assert fields(errors) == ["canaries[].traffic_percent"]
    assert "20 + 90 = 110" in errors[0].message


def test_traffic_of_exactly_100_passes():
    spec = make_spec(canaries=[canary("v2", 40), canary("v3", 60)])
    assert rules.traffic_errors(spec.canaries) == []


def _canaries(shares):
    base = ModelVersion("v0", "vllm", "s3://m/v0")
    return [Canary(replace(base, version=f"c{i}"), share) for i, share in enumerate(shares)]


@given(st.lists(st.integers(min_value=0, max_value=100), max_size=6))
def test_traffic_errors_are_empty_exactly_when_the_sum_is_at_most_100(shares):
    assert (rules.traffic_errors(_canaries(shares)) == []) == (sum(shares) <= 100)


# -- inference-canary-unique, -min-replicas, knative-one-canary ---------------------------


def test_a_canary_named_like_the_stable_version_is_refused():
    spec = make_spec(canaries=[canary("v1", 10, storage_uri="s3://models/llama/v1")])
    errors = rules.canary_name_errors(spec)
    assert fields(errors) == ["canaries[0].version"]
    assert "already model.version" in errors[0].message


def test_a_canary_named_twice_is_refused_at_the_second():
    spec = make_spec(canaries=[canary("v2", 10), canary("v3", 10), canary("v2", 5)])
    errors = rules.canary_name_errors(spec)
    assert fields(errors) == ["canaries[2].version"]
    assert "already canaries[0].version" in errors[0].message


def test_distinct_canaries_pass_the_name_rule():
    assert rules.canary_name_errors(make_spec(canaries=[canary("v2"), canary("v3")])) == []


def test_a_canary_above_the_stable_min_replicas_is_refused():
    spec = make_spec(
        canaries=[canary("v2", 10, min_replicas=2), canary("v3", 10, min_replicas=3)],
        autoscaling={"min_replicas": 2},
    )
    errors = rules.canary_replica_errors(spec)
    assert fields(errors) == ["canaries[1].min_replicas"]
    assert "above the stable version's min_replicas (2)" in errors[0].message


def test_knative_takes_one_canary():
    two = [canary("v2", 10), canary("v3", 10)]
    errors = rules.knative_errors(make_spec(canaries=two, mode="knative"))
    assert fields(errors) == ["canaries"]
    assert rules.knative_errors(make_spec(canaries=two[:1], mode="knative")) == []
    assert rules.knative_errors(make_spec(canaries=two, mode="standard")) == []


# -- inference-version-immutable --------------------------------------------------------


def test_a_version_keeps_its_storage_uri_from_the_history():
    spec = make_spec(stable=model("v1", storage_uri="s3://models/llama/v1-retrained"))
    errors = rules.version_errors(spec, {"v1": "s3://models/llama/v1"})
    assert fields(errors) == ["model.storage_uri"]
    assert "version v1 is s3://models/llama/v1" in errors[0].message


def test_a_canary_version_keeps_its_storage_uri_from_the_history():
    spec = make_spec(canaries=[canary("v0", 10, storage_uri="s3://other")])
    errors = rules.version_errors(
        spec, {"v0": "s3://models/llama/v0", "v1": "s3://models/llama/v1"}
    )
    assert fields(errors) == ["canaries[0].storage_uri"]


def test_a_version_keeps_its_storage_uri_within_one_input():
    spec = make_spec(
        canaries=[canary("v2", 10), canary("v2", 10, storage_uri="s3://models/llama/v2b")]
    )
    errors = rules.version_errors(spec, {})
    assert fields(errors) == ["canaries[1].storage_uri"]
    # spec_errors collects both rules for the same mistake
    assert fields(rules.spec_errors(spec, {})) == [
        "canaries[1].version",
        "canaries[1].storage_uri",
    ]


def test_known_versions_with_their_own_uri_pass():
    spec = make_spec(canaries=[canary("v2", 10)])
    assert rules.version_errors(spec, {"v1": "s3://models/llama/v1", "v0": "s3://x"}) == []


# -- inference-gpus-within-capability ----------------------------------------------------


def kserve_canary_replica_count(stable_min, canary_min, traffic):
    """KServe 0.20 predictor.go canaryReplicaCount, transcribed."""
    if canary_min is not None:
        return canary_min
    return math.ceil(float(stable_min) * float(traffic) / 100)


def kserve_stable_min(stable_min, canaries):
    """KServe 0.20 predictor.go: the stable minReplicas lowered by every canary's
    replicas, to one at least (only when there are canaries)."""
    if not canaries:
        return stable_min
    total = sum(kserve_canary_replica_count(stable_min, m, t) for m, t in canaries)
    return max(stable_min - total, 1)


@pytest.mark.parametrize(
    ("stable_min", "canaries"),
    [
        (1, [(None, 10)]),
        (3, [(None, 50)]),
        (4, [(None, 25), (None, 30)]),
        (10, [(None, 1)]),
        (2, [(2, 10)]),
        (5, [(0, 50), (None, 40)]),
        (0, [(None, 50)]),
    ],
)
def test_replicas_at_min_mirror_kserve(stable_min, canaries):
    spec = make_spec(
        canaries=[
            canary(f"c{i}", t, **({"min_replicas": m} if m is not None else {}))
            for i, (m, t) in enumerate(canaries)
        ],
        autoscaling={"min_replicas": stable_min},
    )
    assert rules.stable_replicas(spec) == kserve_stable_min(stable_min, canaries)
    for c, (m, t) in zip(spec.canaries, canaries, strict=True):
        assert rules.canary_replicas(c, stable_min) == kserve_canary_replica_count(stable_min, m, t)


def test_the_footprint_at_min_counts_the_adjusted_stable_and_each_canary():
    # min 3, a 50 % canary: ceil(1.5) = 2 canary replicas, the stable max(3 - 2, 1) = 1
    spec = make_spec(
        stable=model("v1", gpus=2),
        canaries=[canary("v2", 50)],
        autoscaling={"min_replicas": 3, "max_replicas": 5},
    )
    assert rules.footprint(spec) == (1 * 2 + 2 * 2, 5 * 2 + 2 * 2)
    errors = rules.capability_errors(spec, 5)
    assert fields(errors) == ["model.gpus"]
    assert "needs 6 GPUs at its minimum (1 x 2 for v1 + 2 x 2 for v2)" in errors[0].message
    assert "queue tenant-alpha-research (5)" in errors[0].message
    assert rules.capability_errors(spec, 6) == []
    assert rules.capability_errors(spec, None) == []


def test_the_stable_min_is_never_below_one_with_canaries():
    # min 1, a 10 % canary: ceil(0.1) = 1 canary replica and still 1 stable replica
    spec = make_spec(stable=model("v1", gpus=4), canaries=[canary("v2", 10, gpus=2)])
    assert rules.stable_replicas(spec) == 1
    assert rules.footprint(spec) == (1 * 4 + 1 * 2, None)
    assert fields(rules.capability_errors(spec, 5)) == ["model.gpus"]


def test_replicas_the_queue_could_never_run_are_refused():
    """Rule inference-replicas-bounded: max_replicas whose GPUs exceed the queue's
    capability is refused, naming how many can ever run."""
    spec = make_spec(stable=model("v1", gpus=2), autoscaling={"max_replicas": 6})
    assert rules.capability_errors(spec, 8) == []
    (error,) = rules.replica_bound_errors(spec, 8)
    assert error.field == "autoscaling.max_replicas"
    assert "6 replicas would hold 12 GPUs" in error.message and "(8)" in error.message
    assert error.message.endswith("at most 4 can ever run there")
    assert rules.replica_bound_errors(spec, 12) == []
    assert rules.replica_bound_errors(spec, None) == []
    assert rules.replica_bound_errors(make_spec(stable=model("v1", gpus=2)), 1) == []
    # A canary's GPUs come first: 2 canary replicas x 2 leave (10 - 4) // 2 = 3 stable ones.
    with_canary = make_spec(
        stable=model("v1", gpus=2),
        canaries=[canary("v2", 50)],
        autoscaling={"min_replicas": 3, "max_replicas": 5},
    )
    (error,) = rules.replica_bound_errors(with_canary, 10)
    assert error.message.endswith("at most 3 can ever run there")


def _spec(stable_min, stable_max, stable_gpus, canary_rows):
    base = ModelVersion("v1", "vllm", "s3://m/v1", gpus=stable_gpus)
    return ServiceSpec(
        name="llm",
        tenant="alpha",
        queue="q",
        job_class="normal",
        stable=base,
        canaries=tuple(
            Canary(replace(base, version=f"c{i}", gpus=g), t, m)
            for i, (t, m, g) in enumerate(canary_rows)
        ),
        autoscaling=Autoscaling(stable_min, stable_max),
    )


canary_rows = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=100),
        st.one_of(st.none(), st.integers(min_value=0, max_value=20)),
        st.integers(min_value=0, max_value=8),
    ),
    max_size=4,
)


@given(st.integers(min_value=1, max_value=50), canary_rows)
def test_the_versions_together_keep_at_least_the_stable_minimum(stable_min, rows):
    spec = _spec(stable_min, None, 1, rows)
    total = rules.stable_replicas(spec) + sum(
        rules.canary_replicas(c, stable_min) for c in spec.canaries
    )
    assert total >= stable_min
    assert rules.stable_replicas(spec) >= 1


@given(
    st.integers(min_value=0, max_value=50),
    st.integers(min_value=0, max_value=50),
    st.integers(min_value=0, max_value=8),
    canary_rows,
)
def test_the_footprint_at_min_never_exceeds_the_footprint_at_max(low, extra, gpus, rows):
    high = max(low, 1) + extra
    at_min, at_max = rules.footprint(_spec(low, high, gpus, rows))
    assert at_max is not None and at_min <= at_max
