# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's monitoring_alerting: kube-prometheus-stack's ``alertmanager.config``
is set from it, left out without it (the chart keeps its own), and an input with errors
stops the role at its first task, before anything is written. Rendered with
ansible-playbook on localhost (no cluster, no chart)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
TEMPLATE = ROOT / "roles" / "monitoring" / "templates" / "prometheus_stack_values.yml.j2"
DEFAULTS = ROOT / "roles" / "monitoring" / "defaults" / "main.yml"
ALERTING = {
    "receivers": {
        "oncall": {"webhook_url": "https://hooks.example.com/oncall"},
        "alpha-chat": {"chat_webhook_url": "https://chat.example.com/a", "chat": "slack"},
    },
    "default": "oncall",
    "tenants": {"alpha": "alpha-chat"},
}


def playbook(tmp: Path, plays: list) -> subprocess.CompletedProcess:
    path = tmp / "play.yml"
    path.write_text(yaml.safe_dump(plays, sort_keys=False))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [
            BIN / "ansible-playbook",
            "-i",
            "localhost,",
            str(path),
            "-e",
            json.dumps({"ansible_python_interpreter": sys.executable}),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def play(tasks: list) -> dict:
    return {"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}


@pytest.fixture(scope="module")
def values(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("alerting")
    tasks: list = [{"ansible.builtin.include_vars": {"file": str(DEFAULTS)}}]
    for case, alerting in (("none", {}), ("set", ALERTING)):
        tasks.append(
            {
                "ansible.builtin.copy": {
                    # include_vars outranks task vars: the case's input goes in as template_vars
                    "content": "{{ lookup('ansible.builtin.template', '%s', "
                    "template_vars={'monitoring_alerting': gpucloud_test_alerting}) "
                    "| from_yaml | to_json }}" % TEMPLATE,
                    "dest": str(tmp / f"{case}.json"),
                    "mode": "0600",
                },
                "vars": {"gpucloud_test_alerting": alerting},
            }
        )
    run = playbook(tmp, [play(tasks)])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return {case: json.loads((tmp / f"{case}.json").read_text()) for case in ("none", "set")}


def test_without_alerting_the_chart_keeps_its_own_configuration(values):
    assert "alertmanager" not in values["none"]


def test_alerting_sets_alertmanagers_whole_configuration(values):
    config = values["set"]["alertmanager"]["config"]
    assert config["route"]["receiver"] == "oncall"
    assert {"receiver": "alpha-chat", "matchers": ['tenant="alpha"'], "continue": True} in config[
        "route"
    ]["routes"]
    assert [r["name"] for r in config["receivers"]] == ["null", "alpha-chat", "oncall"]
    assert config["templates"] == []
    # the rest of the values are untouched
    assert values["set"]["kube-state-metrics"] == values["none"]["kube-state-metrics"]


def test_an_input_with_errors_stops_the_role_before_anything(tmp_path):
    bad = {**ALERTING, "default": "pager", "tenants": {"Alpha": "alpha-chat"}}
    run = playbook(
        tmp_path,
        [
            {
                **play([]),
                "roles": [
                    {
                        "role": "gpucloud.platform.monitoring",
                        "vars": {"monitoring_alerting": bad},
                    }
                ],
            }
        ],
    )
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert "Refuse an alerting configuration with errors" in out
    assert "monitoring_alerting was not applied, nothing was written" in out
    assert "default: 'pager' is not a receiver" in out
    assert "tenants.Alpha:" in out
    assert "Probe the kube-prometheus-stack chart" not in out
