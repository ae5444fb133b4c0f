# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule reconcile-heartbeat: the Leases the scheduled playbooks renew, the periods the
alerts assume (those of awx_configure.yml's schedules), and every scheduled playbook
renewing both of its heartbeats. The alerts' behaviour is promtool's
(tests/unit/promtool/heartbeat.test.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.heartbeat_lease import (
    heartbeat_lease_filter,
)
from ansible_collections.gpucloud.platform.plugins.filter.prometheus_rule_groups import (
    prometheus_rule_groups,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.observability import heartbeats

ROOT = Path(__file__).resolve().parents[5]
PLAYBOOKS = ROOT / "playbooks"


def awx_schedules() -> list[dict]:
    (play,) = yaml.safe_load((PLAYBOOKS / "awx_configure.yml").read_text())
    return play["vars"]["awx_schedules"]


def test_the_periods_are_the_awx_schedules_longest_gaps():
    # With the activation on (awx_configure.yml's default) a playbook the rulebook runs
    # too is scheduled every events_every_minutes only: its longest gap.
    expected = {
        s["playbook"]: max(s["every_minutes"], s.get("events_every_minutes") or 0)
        for s in awx_schedules()
    }
    assert expected == heartbeats.RECONCILE_PERIODS_MINUTES


@pytest.mark.parametrize("playbook", sorted(heartbeats.RECONCILE_PERIODS_MINUTES))
def test_every_scheduled_playbook_renews_both_heartbeats(playbook):
    (play,) = yaml.safe_load((PLAYBOOKS / f"{playbook}.yml").read_text())
    renewals = [
        (t["vars"]["heartbeat_playbook"], t["vars"]["heartbeat_step"])
        for t in play["tasks"]
        if t.get("ansible.builtin.import_tasks") == "tasks/heartbeat.yml"
    ]
    assert renewals == [(playbook, "attempt"), (playbook, "success")]
    names = [t["name"] for t in play["tasks"]]
    # the attempt once the variables are checked, the success just before the summary
    assert names.index("Say the run started (its heartbeat)") == 1
    assert names.index("Say the run succeeded (its heartbeat)") == len(names) - 2


@pytest.mark.parametrize(
    ("period", "stale"),
    [(1, 5), (2, 6), (5, 15), (15, 45), (30, 90), (60, 180), (1440, 1500)],
)
def test_late_after_three_periods_at_least_five_minutes_a_day_plus_an_hour(period, stale):
    assert heartbeats.stale_after_minutes(period) == stale


def test_the_leases_are_named_by_playbook_and_step():
    attempt = heartbeats.heartbeat_lease("spot_recompute", "attempt", "T", "job-7")
    success = heartbeats.heartbeat_lease("spot_recompute", "success", "T", "job-7")
    assert attempt["metadata"]["name"] == "heartbeat-spot-recompute-attempt"
    assert success["metadata"]["name"] == "heartbeat-spot-recompute"
    assert success["metadata"]["namespace"] == "platform-system"
    assert success["spec"] == {"holderIdentity": "job-7", "renewTime": "T"}
    assert success["metadata"]["labels"]["platform.io/managed-by"] == "gpucloud-platform"


def test_the_alerts_read_the_leases_the_playbooks_renew():
    stopped, failing = heartbeats.heartbeat_rules({"tenant_catalog": 60})
    clauses = stopped["expr"].split(" or ")
    assert len(clauses) == len(heartbeats.RECONCILE_PERIODS_MINUTES)
    assert (
        'label_replace(time() - kube_lease_renew_time{namespace="platform-system",'
        'lease="heartbeat-tenant-catalog-attempt"} > 10800, "playbook", "tenant_catalog", "", "")'
    ) in clauses
    assert 'lease="heartbeat-payg-reconcile-attempt"} > 300, "playbook"' in stopped["expr"]
    assert (
        'absent(kube_lease_renew_time{namespace="platform-system",lease="heartbeat-usage-report"})'
        in failing["expr"]
    )


@pytest.mark.parametrize("bad", [0, -5, "1m", True, 1.5])
def test_a_period_that_is_not_whole_minutes_is_refused(bad):
    with pytest.raises(AnsibleFilterError, match=r"reconcile_periods\.spot_recompute"):
        prometheus_rule_groups({}, None, None, {"spot_recompute": bad})
    assert heartbeats.period_errors([1]) == [
        "reconcile_periods: [1] must be a mapping of playbook to minutes"
    ]


def test_the_filter_refuses_an_unknown_step():
    with pytest.raises(AnsibleFilterError, match="step 'done' must be one of attempt, success"):
        heartbeat_lease_filter("spot_recompute", "done", "T")
    with pytest.raises(ValueError, match="heartbeat step"):
        heartbeats.heartbeat_lease("spot_recompute", "done", "T", "x")
