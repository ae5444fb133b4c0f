# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules awx-objects, awx-settings and awx-secret-preview, and playbooks/awx_configure.yml's
preview, which needs no AWX: every object it prints uses only options of its awx.awx
module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.awx import objects

ROOT = Path(__file__).resolve().parents[5]
BIN = Path(sys.executable).parent
SURVEYS = yaml.safe_load((ROOT / "awx" / "surveys.yml").read_text())
PLAYBOOKS = sorted(p.stem for p in (ROOT / "playbooks").glob("*.yml"))


def settings(**overrides):
    base = {
        "organization": "Default",
        "project": "gpucloud-platform",
        "project_url": "https://git.example/platform.git",
        "project_branch": "main",
        "inventory": "platform",
        "inventory_file": "inventories/example/hosts.yml",
        "credential": "platform kubeconfig",
        "kubeconfig": "apiVersion: v1\nkind: Config\n",
        "extra_credentials": [],
        "execution_environment": "gpucloud-platform",
        "ee_image": "gpucloud-platform-ee:0.2.0",
        "job_timeout": 3600,
        "schedule_start": "20260101T000000Z",
        "schedules_enabled": True,
        "schedules": [
            {
                "playbook": "spot_recompute",
                "name": "Spot - recompute capacity",
                "description": "d",
                "every_minutes": 1,
                "timeout": 300,
            }
        ],
    }
    return {**base, **overrides}


def test_every_object_in_the_order_awx_needs_them():
    out = objects.awx_objects(settings(), {"tenant_create": SURVEYS["tenant_create"]})
    assert [o["kind"] for o in out] == [
        "organization",
        "credential_type",
        "credential",
        "execution_environment",
        "project",
        "inventory",
        "inventory_source",
        "job_template",
        "job_template",
        "schedule",
    ]
    survey, scheduled = (o["params"] for o in out if o["kind"] == "job_template")
    assert survey["survey_enabled"] and survey["timeout"] == 3600
    assert survey["playbook"] == "playbooks/tenant_create.yml"
    assert survey["execution_environment"] == "gpucloud-platform"
    assert survey["credentials"] == ["platform kubeconfig"]
    assert scheduled["allow_simultaneous"] is False and scheduled["timeout"] == 300
    (sched,) = (o["params"] for o in out if o["kind"] == "schedule")
    assert sched["rrule"] == "DTSTART:20260101T000000Z RRULE:FREQ=MINUTELY;INTERVAL=1"
    (project,) = (o["params"] for o in out if o["kind"] == "project")
    assert project["scm_update_on_launch"] is True
    assert project["default_environment"] == "gpucloud-platform"
    (ctype,) = (o["params"] for o in out if o["kind"] == "credential_type")
    assert ctype["injectors"]["env"] == {"K8S_AUTH_KUBECONFIG": "{{ tower.filename.kubeconfig }}"}


def test_settings_errors_name_the_field_value_and_rule():
    bad = settings(
        project_url="",
        job_timeout=-1,
        schedules=[
            {
                "playbook": "nope",
                "name": "n",
                "description": "d",
                "every_minutes": 0,
                "start": "0:15",
            }
        ],
    )
    errors = [str(e) for e in objects.awx_settings_errors(bad, {"typo": {}}, PLAYBOOKS)]
    assert errors == [
        "awx_project_url: '' must be a non-empty string (rule awx-settings)",
        "awx_job_timeout: -1 must be a whole number of seconds, 0 or more (rule awx-settings)",
        "awx_surveys.typo: names no playbook of the project (playbooks/typo.yml) (rule awx-settings)",
        "awx_schedules[0].playbook: 'nope' names no playbook of the project (rule awx-settings)",
        "awx_schedules[0].every_minutes: 0 must be a whole number of minutes, from 1 to 1440 "
        "(rule awx-settings)",
        "awx_schedules[0].start: '0:15' is not an iCalendar UTC date-time such as "
        "20260101T003000Z (rule awx-settings)",
    ]
    assert objects.awx_settings_errors(settings(), SURVEYS, PLAYBOOKS) == []


def test_the_preview_masks_credential_inputs():
    shown = objects.preview(objects.awx_objects(settings(), {}))
    (cred,) = (o for o in shown if o["kind"] == "credential")
    assert cred["params"]["inputs"] == {"kubeconfig": "<secret: 28 characters>"}
    unset = objects.preview(objects.awx_objects(settings(kubeconfig=""), {}))
    assert "inputs" not in next(o for o in unset if o["kind"] == "credential")["params"]


# The options of the ansible.eda modules awx_configure.yml applies the EDA controller's
# objects with (ansible.eda 2.8's documentation; the collection is installed where the
# playbook runs against a controller, not here).
EDA_AUTH_OPTIONS = {
    "controller_host",
    "controller_username",
    "controller_password",
    "request_timeout",
    "validate_certs",
}
EDA_MODULE_OPTIONS = {
    "eda_credential": {
        "name", "new_name", "inputs", "credential_type_name", "organization_name",
        "description", "state",
    },
    "eda_decision_environment": {
        "name", "new_name", "description", "image_url", "credential", "state",
        "organization_name",
    },
    "eda_project": {
        "name", "new_name", "description", "url", "proxy", "credential", "organization_name",
        "scm_branch", "state", "sync",
    },
    "rulebook_activation": {
        "name", "new_name", "description", "project_name", "rulebook_name", "extra_vars",
        "restart", "restart_policy", "enabled", "decision_environment_name", "awx_token_name",
        "organization_name", "eda_credentials", "k8s_service_name", "swap_single_source",
        "event_streams", "log_level", "state",
    },
}  # fmt: skip


def module_options(kind: str) -> set[str]:
    if kind in EDA_MODULE_OPTIONS:
        return EDA_MODULE_OPTIONS[kind] | EDA_AUTH_OPTIONS
    out = subprocess.run(
        [BIN / "ansible-doc", "-t", "module", "--json", f"awx.awx.{kind}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout)[f"awx.awx.{kind}"]["doc"]["options"])


@pytest.fixture(scope="module")
def previewed(tmp_path_factory) -> list[dict]:
    dest = tmp_path_factory.mktemp("awx") / "objects.yml"
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    extra = ["-e", "awx_preview=true", "-e", f"awx_preview_file={dest}"]
    run = subprocess.run(
        [BIN / "ansible-playbook", "playbooks/awx_configure.yml", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return yaml.safe_load(dest.read_text())


def test_the_preview_renders_every_object_without_an_awx(previewed):
    kinds = [o["kind"] for o in previewed]
    assert kinds.count("job_template") == len(SURVEYS) + 9 and kinds.count("schedule") == 9
    # The EDA controller's objects, and the evented reconciles scheduled as a safety net.
    assert kinds[-4:] == ["eda_credential", "eda_decision_environment", "eda_project",
                          "rulebook_activation"]  # fmt: skip
    (spot,) = (o for o in previewed if o["kind"] == "schedule" and "Spot" in o["name"])
    assert spot["params"]["rrule"].endswith("INTERVAL=5")
    (catalog,) = (
        o
        for o in previewed
        if o["kind"] == "job_template" and o["name"] == "Tenant catalog - reconcile"
    )
    assert catalog["params"]["extra_vars"] == {
        "tenant_catalog_file": "inventories/production/tenants.yml"
    }
    # The ledger is written daily at 00:15 UTC, for the day before, to storage that lasts.
    (ledger,) = (o for o in previewed if o["kind"] == "schedule" and "ledger" in o["name"])
    assert ledger["params"]["rrule"] == "DTSTART:20260101T001500Z RRULE:FREQ=MINUTELY;INTERVAL=1440"
    (ledger_job,) = (
        o for o in previewed if o["kind"] == "job_template" and o["name"] == ledger["name"]
    )
    assert ledger_job["params"]["playbook"] == "playbooks/usage_report.yml"
    assert ledger_job["params"]["extra_vars"] == {
        "usage_report_dir": "/var/lib/gpucloud/usage-reports"
    }
    assert {"organization", "credential_type", "credential", "execution_environment"} <= set(kinds)
    assert {"project", "inventory", "inventory_source"} <= set(kinds)
    # The playbook reads the kubeconfig only in the task that writes the credential.
    (cred,) = (o for o in previewed if o["kind"] == "credential")
    assert "inputs" not in cred["params"]
    # AWX, not Ansible, renders the injector templates: they reach it as written.
    (ctype,) = (o for o in previewed if o["kind"] == "credential_type")
    assert ctype["params"]["injectors"]["file"] == {"template.kubeconfig": "{{ kubeconfig }}"}
    for template in (o for o in previewed if o["kind"] == "job_template"):
        assert template["params"]["execution_environment"] and template["params"]["timeout"] > 0


def test_every_object_uses_only_options_of_its_awx_module(previewed):
    for kind in sorted({o["kind"] for o in previewed}):
        options = module_options(kind)
        for obj in (o for o in previewed if o["kind"] == kind):
            assert set(obj["params"]) <= options, (kind, set(obj["params"]) - options)
