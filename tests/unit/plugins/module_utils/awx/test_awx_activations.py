# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules awx-activations, awx-safety-net and awx-activation-settings."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.awx import activations, objects
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.awx.test_awx_objects import (
    settings,
)

RULEBOOKS = ["platform_reconcile.yml", "platform_reconcile_controller.yml"]
ACTIVATION = {"name": "Platform - events", "rulebook": "platform_reconcile_controller.yml"}


def with_events(**overrides):
    base = settings(
        rulebooks=RULEBOOKS,
        activations_enabled=True,
        activations=[ACTIVATION],
        decision_environment="gpucloud-platform-de",
        de_image="gpucloud-platform-de:0.2.0",
        controller_credential="platform controller",
    )
    base["schedules"][0]["events_every_minutes"] = 5
    return {**base, **overrides}


def test_activations_come_after_the_awx_objects_and_name_what_they_need():
    out = objects.awx_objects(with_events(), {})
    kinds = [o["kind"] for o in out]
    assert kinds[-4:] == list(activations.EDA_KINDS)
    act = out[-1]["params"]
    assert act["rulebook_name"] == "platform_reconcile_controller.yml"
    assert act["project_name"] == "gpucloud-platform"
    assert act["decision_environment_name"] == "gpucloud-platform-de"
    assert act["eda_credentials"] == ["platform controller"]
    # The rulebook's run_job_template actions name the organization from this variable.
    assert act["extra_vars"] == {"awx_organization": "Default"}
    assert act["restart_policy"] == "always" and act["state"] == "enabled"
    (cred,) = (o["params"] for o in out if o["kind"] == "eda_credential")
    assert cred["credential_type_name"] == "Red Hat Ansible Automation Platform"
    assert "inputs" not in cred  # none given: the controller keeps what it has


def test_with_activations_the_evented_schedule_is_the_safety_net():
    (sched,) = (o for o in objects.awx_objects(with_events(), {}) if o["kind"] == "schedule")
    assert sched["params"]["rrule"].endswith("INTERVAL=5")
    off = with_events(activations_enabled=False)
    assert [o["kind"] for o in objects.awx_objects(off, {})][-1] == "schedule"
    (sched,) = (o for o in objects.awx_objects(off, {}) if o["kind"] == "schedule")
    assert sched["params"]["rrule"].endswith("INTERVAL=1")


def test_a_disabled_activation_is_declared_disabled():
    out = objects.awx_objects(with_events(activations=[{**ACTIVATION, "enabled": False}]), {})
    assert out[-1]["params"]["state"] == "disabled"


def test_the_controller_token_is_masked_in_the_preview():
    out = objects.preview(
        objects.awx_objects(with_events(controller_host="https://aap.example"), {})
    )
    (cred,) = (o["params"] for o in out if o["kind"] == "eda_credential")
    assert cred["inputs"] == {"host": "<secret: 19 characters>"}


def test_settings_errors_name_the_activation_field_and_rule():
    bad = with_events(activations=[{"name": "", "rulebook": "platform_recocile.yml"}], de_image="")
    bad["schedules"][0]["events_every_minutes"] = 0
    errors = [str(e) for e in objects.awx_settings_errors(bad, {}, ["spot_recompute"])]
    assert errors == [
        "awx_schedules[0].events_every_minutes: 0 must be a whole number of minutes, from 1 "
        "to 1440 (rule awx-activation-settings)",
        "awx_de_image: '' must be a non-empty string (rule awx-activation-settings)",
        "awx_activations[0].name: '' must be a non-empty string (rule awx-activation-settings)",
        "awx_activations[0].rulebook: 'platform_recocile.yml' names no rulebook of the "
        "collection (extensions/eda/rulebooks/: platform_reconcile.yml, "
        "platform_reconcile_controller.yml) (rule awx-activation-settings)",
    ]
