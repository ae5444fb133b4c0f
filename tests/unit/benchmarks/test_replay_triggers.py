# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform-events replay starts the reconciles the rulebook's rules name, and keeps
the schedules at the periods awx_configure.yml gives them beside the activation."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.benchmarks.replay import triggers
from ansible_collections.gpucloud.platform.benchmarks.replay.reconcilers import NAMES
from ansible_collections.gpucloud.platform.plugins.module_utils.events.event import (
    PLATFORM_EVENTS,
)


def test_the_production_rulebook_starts_what_docs_event_driven_says():
    by_event, _periods = triggers.production()
    assert by_event == {
        "paying_job_blocked": ("spot_recompute", "arbiter_reconcile"),
        "pool_changed": ("spot_recompute",),
        "subscription_changed": ("spot_recompute",),
        "large_job_waiting": ("throttle_reconcile",),
        "large_job_running": ("throttle_reconcile",),
        "large_job_gone": ("throttle_reconcile",),
        "gpu_health_changed": ("gpu_health",),
    }
    # Every event the source emits starts something; the replay runs all of it but GPU
    # health (its trace has no GPU faults: the events are counted, nothing is started).
    assert set(by_event) == set(PLATFORM_EVENTS)
    assert {n for names in by_event.values() for n in names} - set(NAMES) == {"gpu_health"}


def test_the_schedules_stay_as_the_safety_net_and_payg_keeps_its_minute():
    _by_event, periods = triggers.production()
    assert periods["spot_recompute"] == 300.0
    assert periods["arbiter_reconcile"] == 300.0
    assert periods["throttle_reconcile"] == 300.0
    assert periods["payg_reconcile"] == 60.0


def test_a_rule_naming_several_events_and_a_rule_without_a_playbook():
    rulebook = [
        {
            "rules": [
                {
                    "condition": 'event.platform_event == "a" or event.platform_event=="b"',
                    "action": {"run_playbook": {"name": "playbooks/one.yml"}},
                },
                {"condition": 'event.platform_event == "a"', "action": {"debug": {}}},
                {
                    "condition": 'event.platform_event == "a"',
                    "action": {"run_playbook": {"name": "playbooks/two.yml"}},
                },
                {
                    "condition": 'event.platform_event == "a"',
                    "action": {"run_playbook": {"name": "one.yml"}},
                },
            ]
        }
    ]
    assert triggers.reconciles_by_event(rulebook) == {"a": ("one", "two"), "b": ("one",)}


def test_a_schedule_without_events_every_minutes_keeps_its_own_period():
    configure = [
        {
            "vars": {
                "awx_schedules": [
                    {"playbook": "x", "every_minutes": 1, "events_every_minutes": 5},
                    {"playbook": "y", "every_minutes": 15},
                    {"playbook": "z"},
                ]
            }
        }
    ]
    assert triggers.periods_with_events(configure) == {"x": 300.0, "y": 900.0}


def test_an_event_wants_the_reconciles_its_rules_name_and_is_counted():
    from ansible_collections.gpucloud.platform.benchmarks.replay.on_events import EventTriggers

    on = EventTriggers(
        ("spot", "arbiter", "payg"),
        {"blocked": ("spot", "arbiter"), "pool": ("spot",), "other": ("elsewhere",)},
        {"spot": 300.0, "arbiter": 300.0, "payg": 60.0},
    )
    on.emit({"platform_event": "pool"})
    assert [n for n, w in on.wanted.items() if w.is_set()] == ["spot"]
    on.emit({"platform_event": "blocked"})
    on.emit({"platform_event": "other"})  # names no reconcile the replay runs
    assert [n for n, w in on.wanted.items() if w.is_set()] == ["spot", "arbiter"]
    assert on.counts() == {"blocked": 1, "other": 1, "pool": 1}
    # The safety net for what the events start; its own schedule for the rest.
    assert (on.period_s("spot", 60.0), on.period_s("payg", 60.0)) == (300.0, 60.0)
    assert on.starts("arbiter") and not on.starts("payg")
    on.wake_all()
    assert all(w.is_set() for w in on.wanted.values())
