# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local Alertmanager's configuration, built by the collection's own builder
(``observability/alert_routes.alertmanager_config``) from the same ``monitoring_alerting``
shape an inventory gives the monitoring role, so the local cluster routes exactly as
the role would: every alert to the webhook receiver's ``/platform``, and each routed
tenant's to ``/tenant/<name>`` (alert_sink.py). The routed tenants are kept in the
state directory (`cluster.py alert-routes TENANT...` adds some)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from prometheus_files import load_observability, write_changed
from settings import ALERT_SINK, ALERTMANAGER

ROUTES = load_observability("alert_routes")
TENANTS_FILE = "alert-tenants.json"
# Seconds, not the role's minutes: a test sees its notice within a few seconds.
_LOCAL_TIMINGS = {"group_wait": "1s", "group_interval": "1s", "repeat_interval": "1h"}


def routed_tenants(state: Path) -> list[str]:
    path = state / TENANTS_FILE
    return json.loads(path.read_text()) if path.exists() else []


def local_alerting(tenants: list[str]) -> dict[str, Any]:
    """The local cluster's ``monitoring_alerting``: a receiver per routed tenant."""
    receivers: dict[str, Any] = {"platform": {"webhook_url": f"{ALERT_SINK}/platform"}}
    for tenant in tenants:
        receivers[f"tenant-{tenant}"] = {"webhook_url": f"{ALERT_SINK}/tenant/{tenant}"}
    return {
        "receivers": receivers,
        "default": "platform",
        "tenants": {tenant: f"tenant-{tenant}" for tenant in tenants},
        **_LOCAL_TIMINGS,
    }


def write_alertmanager_files(state: Path, add_tenants: list[str] = ()) -> bool:
    """alertmanager.yml for the routed tenants (and ``add_tenants``); True when it changed."""
    tenants = sorted({*routed_tenants(state), *add_tenants})
    (state / TENANTS_FILE).write_text(json.dumps(tenants) + "\n")
    config = ROUTES.alertmanager_config(local_alerting(tenants))
    files = {
        state / "alertmanager.yml": yaml.safe_dump(config, sort_keys=False),
        # where tests and docs find this cluster's Alertmanager and receiver
        state / "alertmanager-url": ALERTMANAGER + "\n",
        state / "alert-sink-url": ALERT_SINK + "\n",
    }
    return write_changed(files)


def reload_alertmanager() -> None:
    # Alertmanager's lifecycle API: it rereads its configuration file.
    req = urllib.request.Request(f"{ALERTMANAGER}/-/reload", method="POST")
    with urllib.request.urlopen(req, timeout=10):
        pass
