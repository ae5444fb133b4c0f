# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""queues/kinds: rule leaf-queue-of-tenant, each wrong kind of queue refused as what it is."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.queues import kinds

MANAGED = {"platform.io/managed-by": "gpucloud-platform"}


def queue(name, parent="root", tenant=None, queue_type=None, managed=True):
    labels = dict(MANAGED) if managed else {}
    if tenant:
        labels["platform.io/tenant"] = tenant
    if queue_type:
        labels["platform.io/queue-type"] = queue_type
    return {"metadata": {"name": name, "labels": labels}, "spec": {"parent": parent}}


LIVE = [
    queue("root", parent="", managed=False),
    queue("default", managed=False),
    queue("tenant-alpha-subscription", tenant="alpha", queue_type="subscription"),
    queue("tenant-alpha-algo", "tenant-alpha-subscription", "alpha", "team"),
    queue("tenant-alpha-payg", tenant="alpha", queue_type="payg"),
    queue("tenant-alpha-spot", tenant="alpha", queue_type="spot"),
    queue("tenant-beta-subscription", tenant="beta", queue_type="subscription"),
    queue("cloud-burst", queue_type="burst"),
    queue("research", managed=False),
]
FACTS = kinds.facts_from_manifests(LIVE)
LEAVES = {"tenant-alpha-algo": "team", "tenant-alpha-payg": "payg", "tenant-alpha-spot": "spot"}


def test_the_leaves_of_a_tenant_are_its_managed_queues_without_children():
    assert kinds.tenant_leaves("alpha", FACTS) == LEAVES
    # a tenant without teams runs its work in its subscription queue, a leaf
    assert kinds.tenant_leaves("beta", FACTS) == {"tenant-beta-subscription": "subscription"}


def test_a_leaf_queue_of_the_tenant_passes():
    for name in LEAVES:
        assert kinds.leaf_queue_errors("queue", name, "alpha", LEAVES, FACTS) == []
        assert kinds.leaf_queue_errors("queue", name, "alpha", LEAVES) == []


@pytest.mark.parametrize(
    ("name", "with_facts", "without_facts"),
    [
        ("root", "Volcano's root queue", "Volcano's root queue"),
        ("default", "Volcano's default queue", "Volcano's default queue"),
        (
            "tenant-alpha-subscription",
            "this tenant's subscription queue, a parent with team queues under it",
            "this tenant's subscription queue, a parent with team queues under it",
        ),
        ("tenant-beta-subscription", "tenant beta's subscription queue", "another tenant's"),
        ("cloud-burst", "the platform's burst queue, of no tenant", "no tenant's queue"),
        ("research", "a queue the platform does not manage", "no tenant's queue"),
        ("tenant-alpha-nope", "no queue the platform manages", "no queue of this tenant"),
    ],
)
def test_every_other_kind_is_refused_as_what_it_is(name, with_facts, without_facts):
    for facts, kind in ((FACTS, with_facts), (None, without_facts)):
        errors = kinds.leaf_queue_errors("queue", name, "alpha", LEAVES, facts)
        assert len(errors) == 1 and errors[0].field == "queue"
        assert errors[0].message.startswith(f"{name!r} is {kind}"), errors[0].message
        assert "expected one of tenant alpha's leaf queues (tenant-alpha-algo, " in str(errors[0])
        assert str(errors[0]).endswith("(rule leaf-queue-of-tenant)")


def test_a_tenant_name_that_prefixes_anothers_does_not_reach_its_queues():
    """Tenant pa and tenant pa-b: tenant-pa-b-x starts like pa's queues but is pa-b's."""
    facts = kinds.facts_from_manifests([queue("tenant-pa-b-x", tenant="pa-b", queue_type="team")])
    errors = kinds.leaf_queue_errors("queue", "tenant-pa-b-x", "pa", {}, facts)
    assert "is tenant pa-b's team queue; expected one of tenant pa's leaf queues (none yet)" in (
        errors[0].message
    )


def test_the_name_alone_refuses_what_is_not_named_like_the_tenants_queues():
    assert kinds.queue_name_errors("queue", "tenant-alpha-algo", "alpha") == []
    errors = kinds.queue_name_errors("manifest.spec.queue", "root", "alpha")
    assert str(errors[0]) == (
        "manifest.spec.queue: 'root' is Volcano's root queue, the parent of every queue; expected "
        "a leaf queue of tenant alpha (tenant-alpha-<team>, -payg or -spot) "
        "(rule leaf-queue-of-tenant)"
    )
    assert "another tenant's queue name" in str(kinds.queue_name_errors("q", "tenant-b-x", "a")[0])
    assert "is not a queue name" in str(kinds.queue_name_errors("queue", None, "alpha")[0])
