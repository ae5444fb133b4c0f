# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule reconcile-heartbeat on the local cluster: a scheduled playbook renews its two
heartbeat Leases, the real kube-state-metrics exports their renew times, and when the
schedule stops (the Leases' last renewal 20 minutes ago) the real Prometheus fires
``PlatformReconcileStopped`` for that playbook, from the rules the monitoring role applies,
and the real Alertmanager delivers it to the platform's webhook receiver.
The rules' every case (stopped, failing, never succeeded, healthy) is promtool's
``tests/unit/promtool/heartbeat.test.yml``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import urllib.parse
import urllib.request

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    notified_alerts,
    prometheus_url,
    run_playbook,
    wait_until,
)

pytestmark = pytest.mark.integration

NAMESPACE = "platform-system"
PLAYBOOK = "throttle_reconcile"
LEASES = ("heartbeat-throttle-reconcile-attempt", "heartbeat-throttle-reconcile")


def prometheus(path: str, **query: str) -> dict:
    url = f"{prometheus_url()}{path}?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]


def renew_times() -> dict[str, float]:
    query = f'kube_lease_renew_time{{namespace="{NAMESPACE}",lease=~"heartbeat-throttle-.*"}}'
    result = prometheus("/api/v1/query", query=query)["result"]
    return {r["metric"]["lease"]: float(r["value"][1]) for r in result}


def firing(alert: str) -> list[dict]:
    alerts = prometheus("/api/v1/alerts")["alerts"]
    return [
        a
        for a in alerts
        if a["labels"].get("alertname") == alert
        and a["labels"].get("playbook") == PLAYBOOK
        and a["state"] == "firing"
    ]


@pytest.fixture
def leases(api_client):
    """The heartbeat Leases, removed afterwards so no stale heartbeat stays behind."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    coordination = client.CoordinationV1Api(api_client)
    yield coordination
    for name in LEASES:
        with contextlib.suppress(ApiException):  # 404: never written
            coordination.delete_namespaced_lease(name, NAMESPACE)


def test_a_stopped_schedule_fires_its_heartbeat_alert(ansible_env, leases):
    started = dt.datetime.now(dt.UTC)
    rc, tasks = run_playbook(ansible_env, f"{PLAYBOOK}.yml", {})
    assert rc == 0, tasks
    for name in LEASES:
        lease = leases.read_namespaced_lease(name, NAMESPACE)
        assert lease.metadata.labels["platform.io/playbook"] == PLAYBOOK
        assert lease.spec.renew_time >= started - dt.timedelta(seconds=1), name

    # kube-state-metrics exports both renew times (whole seconds) for Prometheus; an
    # earlier run's stay until the next scrape.
    def both_exported() -> dict[str, float] | None:
        times = renew_times()
        fresh = all(times.get(name, 0) >= int(started.timestamp()) for name in LEASES)
        return times if fresh else None

    exported = wait_until(
        both_exported, timeout=60, what="this run's heartbeat renew times in Prometheus"
    )
    assert max(exported.values()) - started.timestamp() < 120
    assert not firing("PlatformReconcileStopped")

    # The schedule stops: the last run, attempt and success, was 20 minutes ago.
    then = (started - dt.timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for name in LEASES:
        leases.patch_namespaced_lease(name, NAMESPACE, {"spec": {"renewTime": then}})
    (alert,) = wait_until(
        lambda: firing("PlatformReconcileStopped"),
        timeout=90,
        what="PlatformReconcileStopped for throttle_reconcile",
    )
    assert alert["labels"]["severity"] == "warning"
    # the age of the last run, 20 minutes and the seconds since the patch
    assert alert["annotations"]["summary"].startswith("throttle_reconcile has not run for 20m ")
    # Not running is not failing.
    assert not firing("PlatformReconcileFailing")
    # And the real Alertmanager delivers it to the platform's receiver: no tenant label,
    # so no tenant's route.
    (sent,) = wait_until(
        lambda: [
            a
            for a in notified_alerts("platform", "PlatformReconcileStopped")
            if a["labels"].get("playbook") == PLAYBOOK and a["startsAt"] >= started.isoformat()
        ][-1:],
        timeout=30,
        what="PlatformReconcileStopped at the platform's webhook receiver",
    )
    assert sent["labels"]["severity"] == "warning"
