# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The alerting_errors filter: what is wrong with ``monitoring_alerting``; and
alertmanager_config: Alertmanager's whole configuration from it (rule alert-routing)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    tenant_name_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability.alert_routes import (
    alerting_errors as input_errors,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability.alert_routes import (
    alertmanager_config as build_config,
)


def alerting_errors(alerting: Any) -> list[str]:
    """Every error of ``monitoring_alerting`` (rule alert-routing-input), each tenant a
    tenant's name (rule tenant-name); empty when it is fit to apply."""
    errors = input_errors(alerting)
    tenants = alerting.get("tenants") if isinstance(alerting, Mapping) else None
    if isinstance(tenants, Mapping):
        for tenant in tenants:
            errors += [str(e) for e in tenant_name_errors(tenant, f"tenants.{tenant}")]
    return errors


def alertmanager_config(alerting: Any) -> dict[str, Any]:
    """Alertmanager's configuration for kube-prometheus-stack's ``alertmanager.config``;
    ``{}`` for no alerting configuration (the chart keeps its own)."""
    errors = alerting_errors(alerting)
    if errors:
        raise AnsibleFilterError("alertmanager_config: " + "; ".join(errors))
    return build_config(alerting or {})


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"alerting_errors": alerting_errors, "alertmanager_config": alertmanager_config}
