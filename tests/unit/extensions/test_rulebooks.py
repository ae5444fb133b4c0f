# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rulebooks of extensions/eda/rulebooks: valid for ansible-rulebook 1.3.2 (its own
schema), naming only events the source emits and playbooks the collection has, locked per
reconcile and fed by a coalescing source, and the EDA controller's rulebook the same rules as the local one, each launching the
AWX job template that awx_configure.yml declares for the same playbook."""

from __future__ import annotations

import json
from pathlib import Path

import ansible_rulebook
import jsonschema
import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.events.event import (
    PLATFORM_EVENTS as EVENTS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.signals import (
    DEFAULT_UNHEALTHY_CONDITIONS,
)

ROOT = Path(__file__).resolve().parents[3]
RULEBOOKS = ROOT / "extensions" / "eda" / "rulebooks"
LOCAL = RULEBOOKS / "platform_reconcile.yml"
CONTROLLER = RULEBOOKS / "platform_reconcile_controller.yml"
SCHEMA = Path(ansible_rulebook.__file__).parent / "schema" / "ruleset_schema.json"


def load(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def awx_schedules() -> list[dict]:
    play = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]
    return play["vars"]["awx_schedules"]


@pytest.mark.parametrize("path", sorted(RULEBOOKS.glob("*.yml")), ids=lambda p: p.name)
def test_every_rulebook_is_valid_for_ansible_rulebook(path):
    jsonschema.validate(load(path), json.loads(SCHEMA.read_text()))


@pytest.mark.parametrize("path", sorted(RULEBOOKS.glob("*.yml")), ids=lambda p: p.name)
def test_every_rule_names_an_event_the_source_emits_and_is_debounced(path):
    (ruleset,) = load(path)
    assert ruleset["sources"][0].keys() >= {"gpucloud.platform.cluster_events"}
    assert ruleset["sources"][0]["gpucloud.platform.cluster_events"]["coalesce_seconds"] > 0
    assert ruleset["match_multiple_rules"] is True  # one event, several reconciles
    for rule in ruleset["rules"]:
        named = set(
            part.split('"')[1] for part in rule["condition"].split("event.platform_event ==")[1:]
        )
        assert named and named <= set(EVENTS), (rule["name"], named - set(EVENTS))
        # No rule is throttled: ansible-rulebook gives a throttled event to that rule
        # only, so paying_job_blocked would never reach its second reconcile. The source
        # coalesces bursts instead (rule event-coalesce).
        assert "throttle" not in rule, rule["name"]
        (action,) = rule["action"].values()
        assert action["lock"], rule["name"]  # never two runs of one reconcile at once


def test_each_local_rule_runs_a_playbook_of_the_collection():
    (ruleset,) = load(LOCAL)
    for rule in ruleset["rules"]:
        action = rule["action"]["run_playbook"]
        assert (ROOT / action["name"]).is_file(), action["name"]
        assert action["lock"] == Path(action["name"]).stem


def test_every_event_the_source_emits_runs_a_playbook():
    (ruleset,) = load(LOCAL)
    named = {
        part.split('"')[1]
        for rule in ruleset["rules"]
        for part in rule["condition"].split("event.platform_event ==")[1:]
    }
    assert named == set(EVENTS)


def test_gpu_health_changed_runs_gpu_health_with_the_sources_condition_types():
    for path in (LOCAL, CONTROLLER):
        (ruleset,) = load(path)
        source = ruleset["sources"][0]["gpucloud.platform.cluster_events"]
        # The source judges a node as the playbook's default does (gpu_health's own).
        assert tuple(source["gpu_unhealthy_conditions"]) == DEFAULT_UNHEALTHY_CONDITIONS
        (rule,) = [r for r in ruleset["rules"] if "gpu_health_changed" in r["condition"]]
        assert rule["condition"] == 'event.platform_event == "gpu_health_changed"'
        (action,) = rule["action"].values()
        assert action["lock"] == "gpu_health"
    (local,) = load(LOCAL)
    (rule,) = [r for r in local["rules"] if "gpu_health_changed" in r["condition"]]
    assert rule["action"]["run_playbook"]["name"] == "playbooks/gpu_health.yml"


def test_the_controller_rulebook_is_the_local_one_launching_the_awx_job_templates():
    (local,) = load(LOCAL)
    (controller,) = load(CONTROLLER)
    assert local["sources"] == controller["sources"]
    assert len(local["rules"]) == len(controller["rules"])
    templates = {s["name"]: s for s in awx_schedules()}
    for mine, theirs in zip(local["rules"], controller["rules"], strict=True):
        assert {k: v for k, v in mine.items() if k != "action"} == {
            k: v for k, v in theirs.items() if k != "action"
        }
        playbook = Path(mine["action"]["run_playbook"]["name"]).stem
        launch = theirs["action"]["run_job_template"]
        assert templates[launch["name"]]["playbook"] == playbook, launch["name"]
        assert launch["organization"] == "{{ awx_organization }}"
        assert launch["lock"] == playbook
        # The schedule stays as the safety net, less often than the events.
        assert templates[launch["name"]]["events_every_minutes"] > 1
