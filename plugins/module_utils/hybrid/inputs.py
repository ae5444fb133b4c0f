# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``node_groups`` module's options, and their check before the cluster is read."""

from __future__ import annotations

from typing import Any

from ..common.errors import FieldError, raise_if
from ..common.names import (
    BURST_QUEUE,
    QUEUE_TYPE_PAYG,
    QUEUE_TYPE_TEAM,
    dns_label_errors,
    tenant_name_errors,
)
from ..kube.flow import GATHERED, PARSED
from .burst import burst_quota_errors
from .nodegroups import group_errors

# Queue types the platform may let burst to the cloud, IDC first (rule elastic-local-first).
# Subscriptions are sold out of the IDC and spot is the IDC's idle GPUs: neither bursts.
ELASTIC_TYPES = (QUEUE_TYPE_PAYG, QUEUE_TYPE_TEAM)

OPTIONS: dict[str, dict[str, Any]] = {
    "groups": {"type": "list", "elements": "dict", "required": True},
    "elastic_queue_types": {
        "type": "list",
        "elements": "str",
        "choices": list(ELASTIC_TYPES),
        "default": ["payg"],
    },
    "burst_queue": {"type": "str", "default": BURST_QUEUE},
    "state": {"type": "str", "choices": ["present", GATHERED, PARSED], "default": "present"},
    "facts": {"type": "dict"},
}


def validate(params: dict[str, Any]) -> None:
    """Rule node-group-spec, before the cluster is read."""
    errors = group_errors(params.get("groups"))
    burst = params.get("burst_queue")
    if burst:
        errors += dns_label_errors("burst_queue", burst)
    raise_if(errors)


BURST_OPTIONS: dict[str, dict[str, Any]] = {
    "tenant": {"type": "str", "required": True},
    "gpus": {"type": "int"},
    "state": {
        "type": "str",
        "choices": ["present", "absent", GATHERED, PARSED],
        "default": "present",
    },
    "facts": {"type": "dict"},
    "burst_queue": {"type": "str", "default": BURST_QUEUE},
    "force": {"type": "bool", "default": False},
}


def validate_burst(params: dict[str, Any]) -> None:
    """Rules tenant-name and burst-quota (its shape), before the cluster is read."""
    errors = tenant_name_errors(params.get("tenant"), "tenant")
    errors += dns_label_errors("burst_queue", params.get("burst_queue"))
    state = params.get("state") or "present"
    if state != "absent":
        if params.get("gpus") is None:
            errors.append(FieldError("gpus", f"is required with state: {state}"))
        else:
            errors += burst_quota_errors(params["gpus"], None, str(params.get("burst_queue")))
    raise_if(errors)
