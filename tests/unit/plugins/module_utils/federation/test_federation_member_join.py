# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_member's pure steps (federation/joining, federation/member_join):
rules federation-member-join and member-identity-kept."""

from __future__ import annotations

import base64
import json
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
    Refused,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.federation import joining
from ansible_collections.gpucloud.platform.plugins.module_utils.federation import (
    member_join as mj,
)

NOW = 1_800_000_000.0
CA = b"-----BEGIN CERTIFICATE-----member-----END CERTIFICATE-----"
PARAMS = {
    "name": "cloud-hz",
    "location": "cloud",
    "region": "cn-hangzhou",
    "member_kubeconfig": "/k/cloud.kubeconfig",
    "wait": True,
    "wait_timeout": 120,
}


def jwt(uid: str, exp: float) -> str:
    claims = {"exp": exp, "kubernetes.io": {"serviceaccount": {"uid": uid}}}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"e30.{body}.sig"


def fields(exc_info) -> set[str]:
    return {e.field for e in exc_info.value.errors}


def facts(cluster=None, secrets=None, member_objects=None, ca=CA) -> joining.JoinFacts:
    return joining.JoinFacts(
        cluster=cluster,
        secrets=secrets or {},
        member=joining.MemberFacts(
            endpoint="https://10.0.0.9:6443", ca=ca, objects=member_objects or {}
        ),
        now=NOW,
    )


def joined(request: joining.JoinRequest, uids=("u1", "u2"), exp=NOW + 300 * 86400):
    """The facts after a join: every object there, as the API server returns them."""
    member = {}
    for obj in mj.member_objects(request.name, joining.MANAGED):
        obj = json.loads(json.dumps(obj))
        obj["metadata"]["uid"] = "x"
        member.setdefault(obj["kind"], {})[obj["metadata"]["name"]] = obj
    member["ServiceAccount"][mj.member_sa(request.name)]["metadata"]["uid"] = uids[0]
    member["ServiceAccount"][mj.IMPERSONATOR_SA]["metadata"]["uid"] = uids[1]
    secrets = {
        s["metadata"]["name"]: s
        for s in mj.join_secrets(request.name, jwt("u1", exp), jwt("u2", exp), CA, joining.MANAGED)
    }
    cluster = mj.cluster_object(
        request.name, "https://10.0.0.9:6443", request.labels, request.region
    )
    cluster["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    return facts(cluster=cluster, secrets=secrets, member_objects=member)


def test_a_first_join_writes_the_member_side_then_karmadas_and_asks_two_tokens():
    request = joining.parse(PARAMS)
    run = joining.plan(request, facts())
    kinds = [[(m["kind"], a) for m, a, _live in batch] for batch in run.member_writes]
    assert kinds == [
        [("Namespace", "create")],
        [
            ("ServiceAccount", "create"),
            ("ServiceAccount", "create"),
            ("ClusterRoleBinding", "create"),
        ],
    ]
    assert run.tokens == ("karmada-cloud-hz", "karmada-impersonator")
    secrets, cluster = run.karmada_writes
    assert [m["metadata"]["name"] for m, _action, _live in secrets] == [
        "cloud-hz",
        "cloud-hz-impersonator",
    ]
    ((wanted, action, _live),) = cluster
    assert action == "create"
    assert wanted["spec"]["syncMode"] == "Push"
    assert wanted["spec"]["apiEndpoint"] == "https://10.0.0.9:6443"
    assert wanted["spec"]["region"] == "cn-hangzhou"
    assert wanted["metadata"]["labels"] == {
        "platform.io/node-location": "cloud",
        "topology.kubernetes.io/region": "cn-hangzhou",
        "platform.io/managed-by": "gpucloud-platform",
    }


def test_a_second_join_writes_nothing_and_asks_no_token():
    request = joining.parse(PARAMS)
    run = joining.plan(request, joined(request))
    assert (run.member_writes, run.tokens, run.karmada_writes) == ((), (), ())
    assert joining.report(request, run)["changed"] is False


def test_a_member_built_again_or_a_token_near_its_end_gets_a_new_token():
    request = joining.parse(PARAMS)
    rebuilt = joining.plan(request, joined(request, uids=("new", "u2")))
    assert rebuilt.tokens == ("karmada-cloud-hz",)
    assert [m["metadata"]["name"] for m, _action, _live in rebuilt.karmada_writes[0]] == [
        "cloud-hz"
    ]
    ending = joining.plan(request, joined(request, exp=NOW + 3 * 86400))
    assert ending.tokens == ("karmada-cloud-hz", "karmada-impersonator")


def test_the_region_may_change_and_is_written_to_the_cluster_alone():
    request = joining.parse(PARAMS)
    moved = joining.parse({**PARAMS, "region": "cn-beijing"})
    run = joining.plan(moved, joined(request))
    assert run.tokens == () and run.member_writes == ()
    assert [[m["kind"] for m, _action, _live in b] for b in run.karmada_writes] == [["Cluster"]]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"api_endpoint": "https://elsewhere:6443"}, "it points at https://10.0.0.9:6443"),
        ({"location": "idc"}, "it is a cloud member, not idc"),
    ],
)
def test_a_member_is_never_moved_by_a_join(change, said):
    request = joining.parse(PARAMS)
    with pytest.raises(Refused, match=said) as exc_info:
        joining.plan(joining.parse({**PARAMS, **change}), joined(request))
    assert "Give the new member another name" in str(exc_info.value)


def test_an_idc_members_compliance_zone_is_kept():
    idc = {**PARAMS, "location": "idc", "compliance_zone": "z1"}
    request = joining.parse(idc)
    with pytest.raises(Refused, match="its compliance zone is z1, not none"):
        joining.plan(joining.parse({**idc, "compliance_zone": None}), joined(request))


def test_a_member_without_a_ca_is_refused_naming_the_kubeconfig():
    with pytest.raises(
        Refused, match="member_kubeconfig: its cluster has no certificate authority"
    ):
        joining.plan(joining.parse(PARAMS), facts(ca=None))


def test_bad_options_are_named_at_once_before_connecting():
    with pytest.raises(PlatformValidationError) as exc_info:
        joining.parse(
            {
                **PARAMS,
                "name": "Cloud_HZ",
                "compliance_zone": "z1",
                "api_endpoint": "http://x",
                "wait_timeout": 0,
            }
        )
    assert fields(exc_info) == {"name", "compliance_zone", "api_endpoint", "wait_timeout"}


@given(st.text(alphabet=string.ascii_letters + string.digits, min_size=24, max_size=60))
def test_a_report_never_holds_a_token(token):
    request = joining.parse(PARAMS)
    live = joined(request)
    secrets = {
        s["metadata"]["name"]: s
        for s in mj.join_secrets(request.name, token, token, b"other CA", joining.MANAGED)
    }
    run = joining.plan(request, joining.JoinFacts(live.cluster, secrets, live.member, NOW))
    text = json.dumps(joining.report(request, run))
    assert run.karmada_writes  # the stored tokens differ: both Secrets are in the report
    for value in (token, base64.b64encode(token.encode()).decode()):
        assert value not in text


def test_a_secret_is_shown_by_fingerprints():
    secret, _impersonator = mj.join_secrets("m", "tok", "imp", CA, {})
    shown = joining.shown(secret)["data"]
    assert shown["token"].startswith("sha256:") and shown["caBundle"].startswith("sha256:")
    placeholder, _impersonator = mj.join_secrets("m", joining.NEW_TOKEN, "imp", CA, {})
    assert joining.shown(placeholder)["data"]["token"] == joining.NEW_TOKEN


def test_the_summary_says_what_the_join_did_and_whether_the_member_is_ready():
    first = {
        "objects": [{"kind": "Cluster", "action": "create"}],
        "tokens": ["a", "b"],
        "ready": True,
    }
    assert joining.federation_member_summary(PARAMS, first, False) == [
        "member cloud-hz (cloud, region cn-hangzhou): joined; requested 2 new token(s) in the "
        "member; Karmada reports it Ready"
    ]
    assert joining.federation_member_summary(PARAMS, {"objects": []}, True) == [
        "member cloud-hz (cloud, region cn-hangzhou): already joined, nothing changed; Karmada "
        "does not report it Ready yet"
    ]


def test_token_reuse_follows_the_account_and_the_time_left():
    token = jwt("u1", NOW + 30 * 86400)
    assert mj.token_reusable(token, "u1", NOW)
    assert not mj.token_reusable(token, "u2", NOW)
    assert not mj.token_reusable(token, "u1", NOW + 25 * 86400)
    assert not mj.token_reusable("not-a-jwt", "u1", NOW)
    assert mj.token_claims("a.W10.b") == {}  # a JSON list is no claims


def test_a_member_that_does_not_answer_is_named_as_the_member(monkeypatch):
    """Making the member's client asks it its version: a refusal in the caller's terms
    (the member's connection), not Karmada's "cannot reach" nor the client's exception."""
    from types import SimpleNamespace

    import urllib3.exceptions

    from ansible_collections.gpucloud.platform.plugins.module_utils.federation import joining_io
    from ansible_collections.gpucloud.platform.plugins.module_utils.kube import cluster as kube

    def no_member(options, dry_run=False):
        raise urllib3.exceptions.MaxRetryError(
            None, "/version", reason=ConnectionRefusedError(111, "Connection refused")
        )

    monkeypatch.setattr(kube.Cluster, "from_options", staticmethod(no_member))
    request = SimpleNamespace(member={"kubeconfig": "/m.kubeconfig", "context": None})
    with pytest.raises(Refused) as refused:
        joining_io.member_cluster(request, dry_run=False)
    said = str(refused.value)
    assert said.startswith("member_kubeconfig: cannot reach the Kubernetes API server: ")
    assert said.endswith("(the member's)") and "Connection refused" in said
