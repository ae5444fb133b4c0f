# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus_rule_groups filter: the platform's Prometheus rule groups."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.module_utils.observability.rules import (
    rule_groups,
    threshold_errors,
    thresholds_of,
)


def prometheus_rule_groups(thresholds: Any = None) -> list[dict[str, Any]]:
    """The ``groups`` of the platform's rules with these alert thresholds."""
    values = {} if thresholds is None else thresholds
    errors = threshold_errors(values)
    if errors:
        raise AnsibleFilterError("prometheus_rule_groups: " + "; ".join(errors))
    return rule_groups(thresholds_of(values))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"prometheus_rule_groups": prometheus_rule_groups}
