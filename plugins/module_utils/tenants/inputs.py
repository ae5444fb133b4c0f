# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of the ``tenant``, ``team_queue`` and ``tenant_info`` modules,
checked before the module connects: every problem at once, each naming its
field. Pure; ``tenants.service`` runs the same checks before it reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..common.errors import FieldError, PlatformValidationError, raise_if
from ..common.names import tenant_name_errors
from ..workload.pool import selector_errors
from .spec import TenantSpec, parse_team, parse_tenant_spec
from .tenant_queues import TeamSpec

DEFAULT_WAIT_TIMEOUT = 120

# The argument spec of a team entry of option ``teams``.
TEAM_OPTIONS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "deserved": {"type": "dict"},
    "capability": {"type": "dict"},
    "guarantee": {"type": "dict"},
}
# The argument spec of a tenant's spec (``spec.parse_tenant_spec``), besides its name: the
# same in every module that takes one (``tenant``, ``federation_tenant``).
SPEC_OPTIONS: dict[str, dict[str, Any]] = {
    "subscription": {"type": "dict"},
    "subscription_guarantee": {"type": "dict"},
    "payg": {"type": "dict"},
    "teams": {"type": "list", "elements": "dict", "options": TEAM_OPTIONS},
    "subjects": {"type": "list", "elements": "dict"},
    "egress_cidrs": {"type": "list", "elements": "str", "default": ["0.0.0.0/0"]},
    "pod_cidr": {"type": "str"},
    "service_cidr": {"type": "str"},
    "egress_to_nodes": {"type": "bool", "default": False},
    "egress_to_metadata": {"type": "bool", "default": False},
    "allow_critical": {"type": "bool", "default": False},
    "bounds": {"type": "dict"},
    "vgpu": {"type": "dict"},
}


def parse_present(params: Mapping[str, Any]) -> TenantSpec:
    """Every input of ``state: present``, checked at once; raises with every error."""
    errors = list(selector_errors(params.get("node_selector"), "node_selector"))
    try:
        spec = parse_tenant_spec(params)
    except PlatformValidationError as exc:
        raise PlatformValidationError([*exc.errors, *errors]) from None
    raise_if(errors)
    return spec


def rule_wait_timeout_positive(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule wait-timeout-positive: with ``wait: true`` the module waits
    ``wait_timeout`` seconds for the tenant to go, so it is at least 1; a wait
    of 0 would report a timeout after deleting everything."""
    if not params.get("wait"):
        return []
    timeout = params.get("wait_timeout", DEFAULT_WAIT_TIMEOUT)
    if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0:
        return []
    return [
        FieldError(
            "wait_timeout",
            f"{timeout!r} must be a whole number of seconds of at least 1 with wait: true, the "
            "time to wait for the tenant's namespace and queues to go (rule wait-timeout-positive)",
        )
    ]


def parse_absent(params: Mapping[str, Any]) -> str:
    """Every input of ``state: absent``; the tenant name."""
    name = params.get("name")
    raise_if([*tenant_name_errors(name, "name"), *rule_wait_timeout_positive(params)])
    return str(name)


def rendered_network_errors(params: Mapping[str, Any]) -> list[FieldError]:
    """Rule rendered-networks: ``state: rendered`` reads nothing, so the networks the
    NetworkPolicy cuts out are given."""
    return [
        FieldError(key, "is required with state: rendered, which reads nothing from the cluster")
        for key in ("pod_cidr", "service_cidr")
        if params.get("state") == "rendered" and not params.get(key)
    ]


def parse_writing(params: Mapping[str, Any]) -> TenantSpec:
    """Every input of a state that writes the tenant or plans it (``present``, ``rendered``,
    ``gathered``, ``parsed``), with ``rendered``'s networks, checked at once."""
    errors = rendered_network_errors(params)
    try:
        spec = parse_present(params)
    except PlatformValidationError as exc:
        raise PlatformValidationError([*exc.errors, *errors]) from None
    raise_if(errors)
    return spec


def check_tenant(params: Mapping[str, Any]) -> None:
    """The ``tenant`` module's input, for any state."""
    if params.get("state", "present") == "absent":
        parse_absent(params)
        return
    parse_writing(params)


def parse_team_queue(params: Mapping[str, Any]) -> TeamSpec | None:
    """Every input of ``team_queue``; the team (None for ``state: absent``)."""
    errors: list[FieldError] = list(tenant_name_errors(params.get("tenant"), "tenant"))
    tenant = params.get("tenant") if not errors else ""
    raw = {k: params.get(k) for k in ("name", "deserved", "capability", "guarantee")}
    team = parse_team(str(tenant), raw, "", errors)
    raise_if(errors)
    return team if params.get("state", "present") == "present" else None


def parse_info(params: Mapping[str, Any]) -> str | None:
    """The ``tenant_info`` input: the one tenant to report, or None for all."""
    name = params.get("name")
    if name is not None:
        raise_if(tenant_name_errors(name, "name"))
    return name
