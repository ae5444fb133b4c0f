# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule queue-ownership has one home (``queues/ownership``, ``common/names.owner_tenant``):
on the same live queues, every module that takes a tenant's queue accepts the same
queues with the same types, and refuses the same ones.

* ``vcjob``: the tenant's ``platform-queues`` list as the ``tenant`` module writes it
  (``tenants/tenant_queues.leaf_queue_types``), read back (``ownership.listed_leaves``) and
  judged by ``kinds.leaf_queue_type``;
* ``inference_service``: the same list as read from the cluster
  (``inference/placement.tenant_queue_type``);
* ``queue_arbiter``: the managed Queues it lists (``arbiter/model.queue_states``,
  ``arbiter/inputs.queue_scope_refusal``);
* any module that lists the Queues: ``kinds.tenant_leaves`` over ``kinds.queue_facts``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.inputs import (
    queue_scope_refusal,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.arbiter.model import queue_states
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    is_managed,
    owner_tenant,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.inference import placement
from ansible_collections.gpucloud.platform.plugins.module_utils.policy.admission import (
    tenant_queues_configmap,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.queues import kinds, ownership
from ansible_collections.gpucloud.platform.plugins.module_utils.queues.model import read_live
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.tenant_queues import (
    leaf_queue_types,
)

TENANTS = ("alpha", "beta")


def queue(name: str, parent: str, tenant: str | None, queue_type: str, managed: bool = True):
    labels: dict[str, str] = {}
    if tenant is not None:
        labels["platform.io/tenant"] = tenant
    if queue_type:
        labels["platform.io/queue-type"] = queue_type
    if managed:
        labels["platform.io/managed-by"] = "gpucloud-platform"
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "labels": labels},
        "spec": {"parent": parent, "capability": {"nvidia.com/gpu": "8"}},
    }


@st.composite
def snapshots(draw) -> list[dict[str, Any]]:
    """Both tenants' queues (a subscription queue with or without teams, PAYG, spot),
    and sometimes a queue the platform does not manage that claims a tenant's label."""
    out = []
    for tenant in TENANTS:
        sub = f"tenant-{tenant}-subscription"
        out.append(queue(sub, "root", tenant, "subscription"))
        for team in draw(st.lists(st.sampled_from(["algo", "infra", "eval"]), unique=True)):
            out.append(queue(f"tenant-{tenant}-{team}", sub, tenant, "team"))
        out.append(queue(f"tenant-{tenant}-payg", "root", tenant, "payg"))
        if draw(st.booleans()):
            out.append(queue(f"tenant-{tenant}-spot", "root", tenant, "spot"))
        if draw(st.booleans()):
            out.append(queue(f"tenant-{tenant}-rogue", "root", tenant, "team", managed=False))
    return out


CANDIDATES = (
    "root",
    "default",
    "tenant-nobody-payg",
    *(
        f"tenant-{t}-{s}"
        for t in TENANTS
        for s in ("subscription", "algo", "infra", "eval", "payg", "spot", "rogue")
    ),
)


def written_list(snapshot, tenant):
    """The tenant's ``platform-queues`` ConfigMap as the ``tenant`` module writes it."""
    own = [
        read_live(q)
        for q in snapshot
        if owner_tenant(q["metadata"]["labels"]) == tenant and is_managed(q["metadata"]["labels"])
    ]
    return tenant_queues_configmap(tenant, leaf_queue_types([q for q in own if q is not None]))


def by_vcjob(snapshot, tenant, name):
    leaves = ownership.listed_leaves(written_list(snapshot, tenant), tenant)
    queue_type, errors = kinds.leaf_queue_type(name, leaves, tenant)
    return queue_type if not errors else None


def by_inference(snapshot, tenant, name):
    try:
        return placement.tenant_queue_type(written_list(snapshot, tenant), tenant, name)
    except PlatformValidationError:
        return None


def by_listing(snapshot, tenant, name):
    facts = kinds.queue_facts(
        (q["metadata"]["name"], q["spec"]["parent"], q["metadata"]["labels"]) for q in snapshot
    )
    leaves = kinds.tenant_leaves(tenant, facts)
    queue_type, errors = kinds.leaf_queue_type(name, leaves, tenant)
    return queue_type if not errors else None


def by_arbiter(snapshot, tenant, name):
    managed = [q for q in snapshot if is_managed(q["metadata"]["labels"])]
    states = queue_states(managed)
    if queue_scope_refusal(tenant, name, states) is not None:
        return None
    return states[name].queue_type


@settings(max_examples=150, deadline=None)
@given(snapshot=snapshots())
def test_every_module_accepts_the_same_queues_of_a_tenant(snapshot):
    for tenant in TENANTS:
        for name in CANDIDATES:
            answers = {
                "vcjob": by_vcjob(snapshot, tenant, name),
                "inference_service": by_inference(snapshot, tenant, name),
                "listing": by_listing(snapshot, tenant, name),
                "queue_arbiter": by_arbiter(snapshot, tenant, name),
            }
            assert len(set(answers.values())) == 1, (tenant, name, answers)


def test_worked_case_teams_make_the_subscription_queue_a_parent():
    snapshot = [
        queue("tenant-alpha-subscription", "root", "alpha", "subscription"),
        queue("tenant-alpha-algo", "tenant-alpha-subscription", "alpha", "team"),
        queue("tenant-alpha-payg", "root", "alpha", "payg"),
        queue("tenant-beta-payg", "root", "beta", "payg"),
        queue("tenant-alpha-rogue", "root", "alpha", "team", managed=False),
    ]
    for by in (by_vcjob, by_inference, by_listing, by_arbiter):
        assert by(snapshot, "alpha", "tenant-alpha-algo") == "team"
        assert by(snapshot, "alpha", "tenant-alpha-payg") == "payg"
        # A parent, another tenant's queue, an unmanaged queue, Volcano's own: refused.
        for refused in (
            "tenant-alpha-subscription",
            "tenant-beta-payg",
            "tenant-alpha-rogue",
            "root",
        ):
            assert by(snapshot, "alpha", refused) is None, (by.__name__, refused)


def test_a_tenant_without_a_queue_list_is_refused_in_the_callers_terms():
    with pytest.raises(PlatformValidationError, match="'gamma' has no queue list"):
        ownership.listed_leaves(None, "gamma")
    with pytest.raises(PlatformValidationError, match="'gamma' has no queue list"):
        placement.tenant_queue_type(None, "gamma", "tenant-gamma-payg")


def test_owner_tenant_reads_the_label_and_nothing_else():
    assert owner_tenant({"platform.io/tenant": "alpha"}) == "alpha"
    assert owner_tenant({"platform.io/team": "alpha"}) == ""
    assert owner_tenant(None) == ""
    assert is_managed({"platform.io/managed-by": "gpucloud-platform"})
    assert not is_managed({"platform.io/managed-by": "someone-else"})
