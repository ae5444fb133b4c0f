# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules placement, compliance-local-only, placement-pod-spec and cloud-patterns
(hybrid/placement)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.hybrid import placement as pl

VK_TAINT = "virtual-kubelet.io/provider"
LOCATION = "platform.io/node-location"
ZONE_LABEL = "platform.io/compliance-zone"
NOT_CLOUD = {"key": LOCATION, "operator": "NotIn", "values": ["cloud"]}
TOLERATION = {"key": VK_TAINT, "operator": "Exists", "effect": "NoSchedule"}
CHECKPOINT = ["python", "save.py"]


def fields(errors):
    return [e.field for e in errors]


def required_terms(spec):
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return required.get("nodeSelectorTerms") or []


def tolerates_cloud(spec):
    return any(
        t.get("key") in (VK_TAINT, None, "") and t.get("effect") in (None, "", "NoSchedule")
        for t in spec.get("tolerations") or []
    )


def requires_idc(spec):
    """What the compliance admission policy asks (policy/compliance._IDC_AFFINITY), in
    Python: every required term excludes the cloud by the location label."""
    terms = required_terms(spec)
    return bool(terms) and all(
        any(
            e["key"] == LOCATION
            and (
                (e["operator"] == "NotIn" and "cloud" in e["values"])
                or (e["operator"] == "In" and "cloud" not in e["values"])
            )
            for e in term.get("matchExpressions") or []
        )
        for term in terms
    )


# --- rules placement and compliance-local-only --------------------------------------


def test_the_placements():
    assert pl.PLACEMENTS == ("local-only", "local-first", "cloud-ok")
    assert pl.CLOUD_PLACEMENTS == ("local-first", "cloud-ok")


@pytest.mark.parametrize("placement", [None, "local-only"])
def test_a_local_placement_needs_nothing(placement):
    assert pl.placement_errors(placement) == []
    assert pl.placement_errors(placement, True) == []
    assert pl.placement_errors(placement, True, "finance") == []


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_a_cloud_placement_with_a_checkpoint_is_valid(placement):
    assert pl.placement_errors(placement, False, None, CHECKPOINT) == []


@pytest.mark.parametrize("placement", ["cloud", "Local-Only", "", 3, "idc"])
def test_an_unknown_placement_is_refused_alone(placement):
    errors = pl.placement_errors(placement, "yes", "BAD ZONE")
    assert fields(errors) == ["placement"]
    assert "local-only, local-first, cloud-ok" in errors[0].message


@pytest.mark.parametrize("compliance", ["true", 1, None])
def test_compliance_is_a_boolean(compliance):
    errors = pl.placement_errors("local-only", compliance)
    assert fields(errors) == ["compliance"]


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_a_compliance_job_is_local_only(placement):
    errors = pl.placement_errors(placement, True, None, CHECKPOINT)
    assert fields(errors) == ["placement"]
    assert "compliance-local-only" in errors[0].message and "local-only" in errors[0].message


def test_a_compliance_zone_needs_compliance():
    errors = pl.placement_errors(None, False, "finance")
    assert fields(errors) == ["compliance_zone"] and "compliance: true" in errors[0].message


def test_a_compliance_zone_is_a_dns_label():
    errors = pl.placement_errors(None, True, "Finance_Zone")
    assert fields(errors) == ["compliance_zone"]


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
@pytest.mark.parametrize("checkpoint", [None, []])
def test_a_cloud_placement_needs_a_checkpoint_command(placement, checkpoint):
    errors = pl.placement_errors(placement, False, None, checkpoint)
    assert fields(errors) == ["checkpoint_command"]
    assert placement in errors[0].message and "cloud-patterns" in errors[0].message


def test_every_problem_is_reported_at_once():
    errors = pl.placement_errors("cloud-ok", True, "Bad Zone")
    assert sorted(fields(errors)) == ["checkpoint_command", "compliance_zone", "placement"]


def test_effective_placement():
    assert pl.effective_placement(None, True) == "local-only"
    assert pl.effective_placement(None, False) is None
    assert pl.effective_placement("local-only", True) == "local-only"
    assert pl.effective_placement("cloud-ok", False) == "cloud-ok"


# --- rule placement-pod-spec --------------------------------------------------------


def test_no_placement_adds_nothing():
    assert pl.placement_pod_spec(None) == {}


def test_local_only_requires_not_cloud_and_tolerates_nothing():
    assert pl.placement_pod_spec("local-only") == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [NOT_CLOUD]}]
                }
            }
        }
    }


def test_local_first_prefers_not_cloud_and_tolerates_the_cloud_taint():
    assert pl.placement_pod_spec("local-first") == {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": {"matchExpressions": [NOT_CLOUD]}}
                ]
            }
        },
        "tolerations": [TOLERATION],
    }


def test_cloud_ok_only_tolerates_the_cloud_taint():
    assert pl.placement_pod_spec("cloud-ok") == {"tolerations": [TOLERATION]}


def test_compliance_without_a_placement_is_local_only():
    assert pl.placement_pod_spec(None, True) == pl.placement_pod_spec("local-only")


def test_a_compliance_zone_is_required_in_the_same_term():
    spec = pl.placement_pod_spec(None, True, "finance")
    assert required_terms(spec) == [
        {
            "matchExpressions": [
                NOT_CLOUD,
                {"key": ZONE_LABEL, "operator": "In", "values": ["finance"]},
            ]
        }
    ]
    assert "tolerations" not in spec


def test_a_zone_without_compliance_is_not_applied():
    assert pl.placement_pod_spec("local-only", False, "finance") == pl.placement_pod_spec(
        "local-only"
    )


def test_the_toleration_is_a_copy_of_the_module_constant():
    spec = pl.placement_pod_spec("cloud-ok")
    spec["tolerations"][0]["key"] = "changed"
    assert pl.CLOUD_TOLERATION["key"] == VK_TAINT
    assert pl.placement_pod_spec("cloud-ok")["tolerations"] == [TOLERATION]


@pytest.mark.parametrize("placement", ["local-only", "local-first"])
def test_the_not_cloud_values_are_not_shared_between_pod_specs(placement):
    spec = pl.placement_pod_spec(placement)
    node_affinity = spec["affinity"]["nodeAffinity"]
    if placement == "local-only":
        terms = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]
        expression = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    else:
        preferred = node_affinity["preferredDuringSchedulingIgnoredDuringExecution"]
        expression = preferred[0]["preference"]["matchExpressions"][0]
    expression["values"].append("edge")
    try:
        assert pl.NOT_CLOUD["values"] == ["cloud"]
        assert required_terms(pl.placement_pod_spec("local-only"))[0]["matchExpressions"] == [
            NOT_CLOUD
        ]
    finally:
        # The mutation reached the module constant: put it back for the other tests.
        pl.NOT_CLOUD["values"][:] = ["cloud"]


placements = st.sampled_from([None, *pl.PLACEMENTS])
zones = st.one_of(st.none(), st.sampled_from(["finance", "health", "BAD", "a" * 70]))


@given(placement=placements, compliance=st.booleans(), zone=zones)
def test_a_valid_local_only_or_compliance_pod_never_tolerates_the_cloud(
    placement, compliance, zone
):
    if pl.placement_errors(placement, compliance, zone, CHECKPOINT):
        return
    spec = pl.placement_pod_spec(placement, compliance, zone)
    if compliance or placement == "local-only":
        assert not tolerates_cloud(spec)
        assert requires_idc(spec)
    if compliance and zone:
        assert all(
            {"key": ZONE_LABEL, "operator": "In", "values": [zone]} in t["matchExpressions"]
            for t in required_terms(spec)
        )


@given(placement=st.sampled_from(pl.CLOUD_PLACEMENTS), zone=zones)
def test_a_cloud_placement_tolerates_the_cloud_and_never_requires_the_idc(placement, zone):
    spec = pl.placement_pod_spec(placement, False, zone)
    assert spec["tolerations"] == [TOLERATION]
    assert required_terms(spec) == []


@given(placement=placements, compliance=st.booleans())
def test_compliance_always_passes_the_placement_rules_or_is_refused(placement, compliance):
    errors = pl.placement_errors(placement, compliance, None, CHECKPOINT)
    if compliance and placement in pl.CLOUD_PLACEMENTS:
        assert "placement" in fields(errors)
    else:
        assert errors == []


def test_compliance_labels():
    assert pl.compliance_labels(True) == {"platform.io/compliance": "restricted"}
    assert pl.compliance_labels(False) == {}


# --- rule cloud-patterns ------------------------------------------------------------

PREFETCH = {"image": "busybox:1", "command": ["sh", "-c", "cp -r /src /data/local"]}


def test_a_valid_prefetch():
    assert pl.prefetch_errors(PREFETCH) == []
    assert pl.prefetch_errors({**PREFETCH, "path": "/scratch"}) == []
    assert pl.prefetch_errors(None) == []


@pytest.mark.parametrize("value", ["busybox", ["busybox"], 3])
def test_a_prefetch_is_a_mapping(value):
    assert fields(pl.prefetch_errors(value)) == ["prefetch"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"image": ""}, "prefetch.image"),
        ({"image": None}, "prefetch.image"),
        ({"command": "cp"}, "prefetch.command"),
        ({"command": []}, "prefetch.command"),
        ({"command": ["cp", 3]}, "prefetch.command"),
        ({"path": "data"}, "prefetch.path"),
        ({"path": 3}, "prefetch.path"),
        ({"size": "1Gi"}, "prefetch.size"),
    ],
)
def test_a_bad_prefetch_names_its_field(change, field):
    assert fields(pl.prefetch_errors({**PREFETCH, **change})) == [field]


def test_a_prefetch_without_image_or_command_names_both():
    assert fields(pl.prefetch_errors({})) == ["prefetch.image", "prefetch.command"]


@pytest.mark.parametrize("placement", [None, "local-only"])
def test_a_local_pod_gets_no_cloud_pattern(placement):
    assert pl.cloud_patterns(placement, PREFETCH) == {
        "init_containers": [],
        "volumes": [],
        "mounts": [],
        "grace": None,
    }


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_a_cloud_pod_gets_five_minutes_to_checkpoint(placement):
    out = pl.cloud_patterns(placement, None)
    assert out["grace"] == 300 == pl.CLOUD_GRACE_SECONDS
    assert out["init_containers"] == out["volumes"] == out["mounts"] == []


@pytest.mark.parametrize("placement", pl.CLOUD_PLACEMENTS)
def test_a_cloud_pod_prefetches_onto_a_node_local_volume(placement):
    out = pl.cloud_patterns(placement, PREFETCH)
    mount = {"name": "prefetch", "mountPath": "/data/local"}
    assert out["init_containers"] == [
        {
            "name": "data-prefetch",
            "image": "busybox:1",
            "command": PREFETCH["command"],
            "volumeMounts": [mount],
        }
    ]
    assert out["volumes"] == [{"name": "prefetch", "emptyDir": {}}]
    assert out["mounts"] == [mount]


def test_the_prefetch_path_is_the_caller_s():
    out = pl.cloud_patterns("cloud-ok", {**PREFETCH, "path": "/scratch"})
    assert out["mounts"] == [{"name": "prefetch", "mountPath": "/scratch"}]
    assert out["init_containers"][0]["volumeMounts"] == out["mounts"]


def test_the_prefetch_command_is_a_copy():
    prefetch = {**PREFETCH, "command": ["sh"]}
    out = pl.cloud_patterns("cloud-ok", prefetch)
    out["init_containers"][0]["command"].append("x")
    assert prefetch["command"] == ["sh"]
