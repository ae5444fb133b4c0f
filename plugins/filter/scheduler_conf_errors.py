# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduler_conf_errors: what is wrong with a volcano-scheduler.conf for Volcano 1.15.1."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.policy.scheduler_conf_rules import (
    scheduler_conf_errors as _scheduler_conf_errors,
)


def scheduler_conf_errors(conf, platform_policy=True):
    """Every broken rule as 'field: message' naming tier, plugin and key; [] when fit to write."""
    return [str(e) for e in _scheduler_conf_errors(conf, platform_policy=bool(platform_policy))]


class FilterModule:
    def filters(self):
        return {"scheduler_conf_errors": scheduler_conf_errors}
