# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tenant's Role ``tenant-user``, the RoleBinding that grants it, and the
queue reader.

The Role is namespaced, so it grants nothing outside ``tenant-<name>``.
Volcano Queues are cluster-scoped: a namespaced Role cannot grant even read
access to them, so the queue reader (a ClusterRole and its binding) grants
``get`` and ``watch`` on exactly the tenant's own queues, by name; no tenant
may list them all. Which queue a job may name is the admission policy's
business, not RBAC's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..common.errors import FieldError
from ..common.names import dns_label_errors, namespace_name, tenant_labels

ROLE_NAME = "tenant-user"
SUBJECT_KINDS = ("Group", "User", "ServiceAccount")
_RBAC_GROUP = "rbac.authorization.k8s.io"
_READ = ["get", "list", "watch"]
_WRITE = ["get", "list", "watch", "create", "update", "patch", "delete"]

# The design's rules (Volcano jobs, KServe inference services, pods and their
# logs and events), plus what a job needs to carry its own configuration and
# storage. Pod groups are Volcano's bookkeeping: read-only.
ROLE_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["batch.volcano.sh"], "resources": ["jobs"], "verbs": _WRITE},
    {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": _READ},
    {"apiGroups": ["serving.kserve.io"], "resources": ["inferenceservices"], "verbs": _WRITE},
    {"apiGroups": [""], "resources": ["pods", "pods/log", "events"], "verbs": _READ},
    {
        "apiGroups": [""],
        "resources": ["configmaps", "persistentvolumeclaims", "secrets", "services"],
        "verbs": _WRITE,
    },
]


def default_subjects(tenant: str) -> list[dict[str, str]]:
    return [{"kind": "Group", "name": f"tenant:{tenant}"}]


def subject_errors(subjects: object, field: str = "subjects") -> list[FieldError]:
    """Rule subjects: a list of {kind: Group|User|ServiceAccount, name, namespace (ServiceAccount only)}."""
    if not isinstance(subjects, Sequence) or isinstance(subjects, str):
        return [FieldError(field, f"{subjects!r} must be a list of subjects")]
    errors: list[FieldError] = []
    for i, subject in enumerate(subjects):
        path = f"{field}[{i}]"
        if not isinstance(subject, Mapping):
            errors.append(FieldError(path, f"{subject!r} must be a mapping with kind and name"))
            continue
        unknown = sorted(set(subject) - {"kind", "name", "namespace"})
        if unknown:
            errors.append(
                FieldError(
                    f"{path}.{unknown[0]}", "is not a subject field; use kind, name, namespace"
                )
            )
        kind = subject.get("kind")
        if kind not in SUBJECT_KINDS:
            errors.append(
                FieldError(f"{path}.kind", f"{kind!r} is not one of {', '.join(SUBJECT_KINDS)}")
            )
        name = subject.get("name")
        if not isinstance(name, str) or not name.strip():
            errors.append(FieldError(f"{path}.name", f"{name!r} must be a non-empty string"))
        namespace = subject.get("namespace")
        if namespace is not None:
            if kind != "ServiceAccount":
                errors.append(
                    FieldError(
                        f"{path}.namespace",
                        f"only a ServiceAccount subject has a namespace, not a {kind}",
                    )
                )
            else:
                errors += dns_label_errors(f"{path}.namespace", namespace)
    if not subjects:
        errors.append(
            FieldError(
                field,
                "is empty; give at least one subject, or leave it out for Group tenant:<name>",
            )
        )
    return errors


def role(tenant: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "Role",
        "metadata": {
            "name": ROLE_NAME,
            "namespace": namespace_name(tenant),
            "labels": tenant_labels(tenant),
        },
        "rules": [dict(rule, verbs=list(rule["verbs"])) for rule in ROLE_RULES],
    }


def role_binding(tenant: str, subjects: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    rendered = []
    for s in subjects:
        if s["kind"] == "ServiceAccount":
            rendered.append(
                {
                    "kind": "ServiceAccount",
                    "name": s["name"],
                    "namespace": s.get("namespace") or namespace_name(tenant),
                }
            )
        else:
            rendered.append({"apiGroup": _RBAC_GROUP, "kind": s["kind"], "name": s["name"]})
    return {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": ROLE_NAME,
            "namespace": namespace_name(tenant),
            "labels": tenant_labels(tenant),
        },
        "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "Role", "name": ROLE_NAME},
        "subjects": rendered,
    }


def queue_reader_name(tenant: str) -> str:
    return f"gpucloud-tenant-{tenant}-queues"


def queue_reader(
    tenant: str, subjects: Sequence[Mapping[str, str]], queues: Sequence[str]
) -> list[dict[str, Any]]:
    """Rule tenant-reads-own-queues: a ClusterRole that lets the tenant's subjects get (by
    name) and watch exactly its own Queues, and its binding. Queues are cluster-scoped, so
    the namespaced Role cannot grant them, and a list of all Queues would show every tenant."""
    name = queue_reader_name(tenant)
    cluster_role = {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": tenant_labels(tenant)},
        "rules": [
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["queues"],
                "resourceNames": sorted(queues),
                "verbs": ["get", "watch"],
            }
        ],
    }
    binding = role_binding(tenant, subjects)
    binding.update(kind="ClusterRoleBinding")
    binding["metadata"] = {"name": name, "labels": tenant_labels(tenant)}
    binding["roleRef"] = {"apiGroup": _RBAC_GROUP, "kind": "ClusterRole", "name": name}
    return [cluster_role, binding]
