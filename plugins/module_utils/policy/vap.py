# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Builders for ValidatingAdmissionPolicies and their bindings: the shape every
policy of the collection shares (tenant namespaces only, Deny, managed label)."""

from __future__ import annotations

from typing import Any

from ..common.names import ADMISSION_API, LABEL_MANAGED_BY, LABEL_TENANT, MANAGED_BY

POLICY_PREFIX = "gpucloud-"


def cel_list(values: list[str] | tuple[str, ...]) -> str:
    """A CEL list literal of strings."""
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def managed_labels() -> dict[str, str]:
    return {LABEL_MANAGED_BY: MANAGED_BY}


def tenant_match(resources: list[tuple[str, str]], operations: list[str]) -> dict[str, Any]:
    """The given (API group, resource) pairs in namespaces that carry a tenant label."""
    return {
        "namespaceSelector": {"matchExpressions": [{"key": LABEL_TENANT, "operator": "Exists"}]},
        "resourceRules": [
            {
                "apiGroups": [group],
                "apiVersions": ["*"],
                "operations": list(operations),
                "resources": [resource],
            }
            for group, resource in resources
        ],
    }


def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": managed_labels()},
        "spec": {"failurePolicy": "Fail", **spec},
    }


def binding(policy_name: str, param_ref: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"policyName": policy_name, "validationActions": ["Deny"]}
    if param_ref is not None:
        spec["paramRef"] = param_ref
    return {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name, "labels": managed_labels()},
        "spec": spec,
    }
