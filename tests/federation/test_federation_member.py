# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module federation_member on the real local federation: the suite's fixture
(``conftest.federation``) joins the cloud member ``fed-cloud`` with it, against Karmada's
API server and the member's, as a playbook runs it (``ansible -m``). Rules
federation-member-join and member-identity-kept:

* the join made the member's accounts and binding, Karmada's two Secrets and a Push-mode
  Cluster with the platform's labels, and Karmada calls the member Ready; the result holds
  no token;
* a second run writes nothing and requests no token (no resourceVersion moves, in Karmada
  or in the member);
* check mode writes nothing in either;
* a run that would move the member (another location) is refused before any write;
* playbooks/federation_bring_up.yml in check mode writes nothing, run again writes
  nothing, and says a refusal in its own variables.
"""

from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.federation.member_join import (
    CLUSTER_API,
    IMPERSONATOR_SA,
    KARMADA_CLUSTER,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import Cluster
from ansible_collections.gpucloud.platform.tests.federation.federation_helpers import (
    CLOUD_JOIN,
    PLATFORM_ARGS,
    platform_versions,
)
from ansible_collections.gpucloud.platform.tests.integration.conftest import ansible_environment
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    run_playbook,
    state_dir,
)

pytestmark = pytest.mark.federation

MODULE = "gpucloud.platform.federation_member"
NAME = CLOUD_JOIN["name"]


def _karmada(federation) -> Cluster:
    return Cluster.from_kubeconfig(federation["kubeconfig"])


def _member() -> Cluster:
    return Cluster.from_kubeconfig(str(state_dir(NAME) / "admin.kubeconfig"))


def versions(federation) -> dict[str, str]:
    """The resourceVersion of everything the join wrote, in Karmada and in the member (the
    Cluster's generation and labels)."""
    karmada, member = _karmada(federation), _member()
    found = {"Cluster": karmada.get(CLUSTER_API, "Cluster", NAME)}
    for secret in (NAME, f"{NAME}-impersonator"):
        found[f"Secret/{secret}"] = karmada.get("v1", "Secret", secret, KARMADA_CLUSTER)
    for account in (f"karmada-{NAME}", IMPERSONATOR_SA):
        found[f"member/{account}"] = member.get("v1", "ServiceAccount", account, KARMADA_CLUSTER)
    found["member/binding"] = member.get(
        "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", f"karmada-{NAME}"
    )
    assert all(found.values()), found
    versions = {k: v["metadata"]["resourceVersion"] for k, v in found.items()}
    # Karmada's controllers write the Cluster's status (and taints) all the time: what a
    # join writes is its spec (its generation) and its labels
    cluster = found["Cluster"]["metadata"]
    versions["Cluster"] = f"{cluster['generation']} {sorted(cluster['labels'].items())}"
    return versions


def test_the_cloud_member_was_joined_by_the_module(federation):
    joined = federation["cloud_join"]
    assert joined["changed"] is True
    assert joined["ready"] is True
    assert sorted(joined["tokens"]) == sorted([f"karmada-{NAME}", IMPERSONATOR_SA])
    assert joined["summary"] == [
        f"member {NAME} (cloud, region local-cloud): joined; requested 2 new token(s) in the "
        "member; Karmada reports it Ready"
    ]
    cluster = _karmada(federation).get(CLUSTER_API, "Cluster", NAME)
    assert cluster["spec"]["syncMode"] == "Push"
    assert cluster["spec"]["region"] == "local-cloud"
    assert cluster["metadata"]["labels"]["platform.io/node-location"] == "cloud"
    assert cluster["metadata"]["labels"]["topology.kubernetes.io/region"] == "local-cloud"
    # the tokens are in Karmada, and nowhere in what the run returned
    text = json.dumps(joined)
    for secret in (NAME, f"{NAME}-impersonator"):
        stored = _karmada(federation).get("v1", "Secret", secret, KARMADA_CLUSTER)
        token = base64.b64decode(stored["data"]["token"]).decode()
        assert token.count(".") == 2  # a JWT the member issued
        assert token not in text and stored["data"]["token"] not in text


def test_a_second_join_writes_nothing(federation, run_on_federation):
    before = versions(federation)
    again = run_on_federation(MODULE, CLOUD_JOIN)
    assert not again.get("failed"), again
    assert (again["changed"], again["objects"], again["tokens"]) == (False, [], [])
    assert "already joined, nothing changed; Karmada reports it Ready" in again["summary"][0]
    assert versions(federation) == before


def test_check_mode_writes_nothing_in_karmada_or_the_member(federation, run_on_federation):
    before = versions(federation)
    moved = run_on_federation(MODULE, {**CLOUD_JOIN, "region": "elsewhere"}, check=True, diff=True)
    assert not moved.get("failed"), moved
    assert moved["changed"] is True
    assert moved["objects"] == [{"kind": "Cluster", "name": NAME, "action": "update"}]
    (diff,) = moved["diff"]
    assert diff["after"]["spec"]["region"] == "elsewhere"
    assert "would be brought up to date" in moved["summary"][0]
    assert versions(federation) == before


def test_a_join_that_would_move_the_member_is_refused_before_any_write(
    federation, run_on_federation
):
    before = versions(federation)
    refused = run_on_federation(MODULE, {**CLOUD_JOIN, "location": "idc"})
    assert refused.get("failed") is True
    assert "it is a cloud member, not idc" in refused["msg"]
    assert refused["changed"] is False
    assert versions(federation) == before


# The playbook's entry for the cloud member: the module's options under the playbook's keys.
CLOUD_ENTRY = {
    "name": NAME,
    "location": "cloud",
    "region": CLOUD_JOIN["region"],
    "kubeconfig": CLOUD_JOIN["member_kubeconfig"],
}


def test_the_bring_up_playbook_checks_then_finds_nothing_to_do(federation, federation_platform):
    """playbooks/federation_bring_up.yml, its connection Karmada's API server: in check mode
    with a changed region it writes nothing and says what it would do; run as the
    federation is (the cloud member, cloud-burst of 8 GPUs) it writes nothing; a member
    it would move is refused in the playbook's words."""
    karmada = _karmada(federation)
    env = ansible_environment(federation["kubeconfig"])
    extra = {
        "federation_members": [CLOUD_ENTRY],
        "federation_cloud_burst_gpus": PLATFORM_ARGS["cloud_burst_gpus"],
    }
    before = (versions(federation), platform_versions(karmada))
    moved = {**extra, "federation_members": [{**CLOUD_ENTRY, "region": "elsewhere"}]}
    rc, tasks = run_playbook(env, "federation_bring_up.yml", moved, check=True)
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    summary = tasks["Summary"]["msg"]
    assert summary[0].startswith(f"member {NAME} (cloud, region elsewhere): join would be")
    assert summary[1].startswith("platform in the federation: unchanged")
    assert (versions(federation), platform_versions(karmada)) == before

    rc, tasks = run_playbook(env, "federation_bring_up.yml", extra)
    assert rc == 0, {n: r.get("msg") for n, r in tasks.items() if r.get("failed")}
    assert "already joined, nothing changed" in tasks["Summary"]["msg"][0]
    assert (versions(federation), platform_versions(karmada)) == before

    refused = {**extra, "federation_members": [{**CLOUD_ENTRY, "location": "idc"}]}
    rc, tasks = run_playbook(env, "federation_bring_up.yml", refused)
    assert rc != 0
    msg = tasks["Say the refusal in the playbook's words"]["msg"]
    assert msg.startswith("federation_members: Karmada already has a member fed-cloud"), msg
    assert msg.endswith("(federation_members is a variable of federation_bring_up.yml)"), msg
    assert (versions(federation), platform_versions(karmada)) == before
