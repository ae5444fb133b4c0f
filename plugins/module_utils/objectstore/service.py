# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The object store against the cluster and the store: the ``tenant_object_store`` module
(``STORE_FLOW``; its pure steps are ``objectstore/plan``) and the ``checkpoint_retention``
module (``RETENTION_FLOW``; ``objectstore/retention_plan``), through ``kube.flow``.

Reads the platform's connection Secret, the tenant's namespace, Secret and
ServiceAccount (one GET each), then the store's accounts and buckets (one admin call
each); writes the store first (account, buckets, owners), then the cluster (Secret,
ServiceAccount, server-side applied). In check mode the store is not written and the
cluster's writes are the API server's dry runs.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..common.errors import PartialWrite, Refused
from ..common.names import PLATFORM_NAMESPACE, namespace_name
from ..kube.cluster import ApiException, Cluster, TransportError
from ..kube.flow import Flow
from .buckets import TENANT_ROLE
from .connection import CONNECTION_SECRET, connection_from
from .credentials import CREDENTIALS_NAME
from .gateway_io import Gateway, StoreError
from .plan import StoreFacts, StorePlan, StoreRequest, parse_store, plan_store, report_store
from .retention_plan import (
    RetentionFacts,
    RetentionPlan,
    RetentionRequest,
    checkpoint_buckets,
    parse_retention,
    plan_retention,
    report_retention,
)


def gather_store(request: StoreRequest, cluster: Cluster) -> StoreFacts:
    """The connection, the tenant's namespace and objects, then the store's account and
    bucket owners. The reads stop at a connection the plan refuses."""
    conn_secret = cluster.get("v1", "Secret", CONNECTION_SECRET, namespace=PLATFORM_NAMESPACE)
    connection, errors = connection_from(conn_secret)
    if connection is None:
        return StoreFacts(connection=None, connection_errors=tuple(errors))
    namespace = namespace_name(request.tenant)
    facts = StoreFacts(
        connection=connection,
        namespace=cluster.get("v1", "Namespace", namespace),
        secret=cluster.get("v1", "Secret", CREDENTIALS_NAME, namespace=namespace),
        account=cluster.get("v1", "ServiceAccount", CREDENTIALS_NAME, namespace=namespace),
        fresh_key=secrets.token_urlsafe(30),
    )
    gateway = Gateway(connection)
    try:
        store_key = gateway.account_key(request.identity)
        wanted = set(request.buckets.values())
        owners = {b: o for b, o in gateway.bucket_owners().items() if b in wanted}
    except StoreError as exc:
        raise Refused(str(exc)) from exc
    finally:
        cluster.requests += gateway.requests
    return StoreFacts(
        connection=facts.connection,
        namespace=facts.namespace,
        store_key=store_key,
        owners=owners,
        secret=facts.secret,
        account=facts.account,
        fresh_key=facts.fresh_key,
    )


def _write_store(
    request: StoreRequest, planned: StorePlan, gateway: Gateway, done: list[str]
) -> None:
    if planned.create_account:
        gateway.create_account(request.identity, planned.key, TENANT_ROLE)
        done.append(f"account {request.identity}")
    for bucket in planned.create_buckets:
        gateway.create_bucket(bucket)
        done.append(f"bucket {bucket}")
    for bucket in planned.hand_over:
        gateway.hand_over(bucket, request.identity)
        done.append(f"owner of {bucket}")
    if planned.remove_account:
        gateway.delete_account(request.identity)
        done.append(f"account {request.identity} removed")


def apply_store(
    request: StoreRequest, planned: StorePlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """The store's writes, then the cluster's, in the plan's order."""
    if check_mode:
        for manifest in planned.manifests:
            cluster.apply(manifest)  # the API server's dry run: the manifests are valid
        return report_store(request, planned)
    done: list[str] = []
    gateway = Gateway(planned.connection) if planned.connection else None
    try:
        if gateway is not None:
            _write_store(request, planned, gateway, done)
        for manifest in planned.manifests:
            cluster.apply(manifest)
            done.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
        for kind in planned.remove_objects:
            cluster.delete("v1", kind, CREDENTIALS_NAME, namespace=namespace_name(request.tenant))
            done.append(f"{kind}/{CREDENTIALS_NAME} removed")
    except (StoreError, ApiException, TransportError) as exc:
        raise PartialWrite(f"the object store of tenant {request.tenant}", done, exc) from exc
    finally:
        if gateway is not None:
            cluster.requests += gateway.requests
    return report_store(request, planned, done)


# Module tenant_object_store: a tenant's buckets, account and credentials.
STORE_FLOW: Flow[StoreRequest, StoreFacts, StorePlan] = Flow(
    parse=parse_store,
    gather=gather_store,
    plan=plan_store,
    apply=apply_store,
    report=report_store,
)


def run(params: dict[str, Any], cluster: Cluster, check_mode: bool) -> dict[str, Any]:
    """The ``tenant_object_store`` module's run on a cluster (``STORE_FLOW``)."""
    return STORE_FLOW.run(params, cluster, check_mode)


# -- checkpoint_retention ------------------------------------------------------------------


def gather_retention(request: RetentionRequest, cluster: Cluster) -> RetentionFacts:
    """The connection; the store's buckets and owners (one admin call); the objects of each
    tenant checkpoint bucket swept (one listing each, a page per thousand objects)."""
    conn_secret = cluster.get("v1", "Secret", CONNECTION_SECRET, namespace=PLATFORM_NAMESPACE)
    connection, errors = connection_from(conn_secret)
    if connection is None:
        return RetentionFacts(connection=None, connection_errors=tuple(errors))
    gateway = Gateway(connection)
    try:
        buckets = checkpoint_buckets(request, gateway.bucket_owners())
        prefix = f"{request.job}/" if request.job else ""
        objects = {b: list(gateway.objects(b, prefix)) for b in buckets}
    except StoreError as exc:
        raise Refused(str(exc)) from exc
    finally:
        cluster.requests += gateway.requests
    return RetentionFacts(connection=connection, buckets=buckets, objects=objects)


def apply_retention(
    request: RetentionRequest, planned: RetentionPlan, cluster: Cluster, check_mode: bool
) -> dict[str, Any]:
    """Delete the expired checkpoints' objects, bucket by bucket (none in check mode)."""
    if check_mode or planned.connection is None:
        return report_retention(request, planned)
    gateway = Gateway(planned.connection)
    done: list[str] = []
    try:
        for bucket, gone in planned.expired.items():
            if gone:
                gateway.delete_objects(bucket, [k for c in gone for k in c.keys])
                done += [f"{bucket}/{c.where}" for c in gone]
    except StoreError as exc:
        raise PartialWrite("deleting expired checkpoints", done, exc) from exc
    finally:
        cluster.requests += gateway.requests
    return report_retention(request, planned)


# Module checkpoint_retention: the newest checkpoints of each job kept, the rest deleted.
RETENTION_FLOW: Flow[RetentionRequest, RetentionFacts, RetentionPlan] = Flow(
    parse=parse_retention,
    gather=gather_retention,
    plan=plan_retention,
    apply=apply_retention,
    report=report_retention,
)
