# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Event-Driven Ansible controller's objects that run the platform's rulebooks, as
data (pure: no I/O, no controller).

``playbooks/awx_configure.yml`` applies them with the ansible.eda modules (each object's
``kind`` is ``eda_<module>``, or ``rulebook_activation``; ``params`` are that module's own
options), beside the AWX objects of ``awx/objects.py``, or prints them (``awx_preview``).

Rules held here:

* Rule awx-activations (``eda_objects``): with activations asked for, the credential the
  rulebooks use to launch AWX job templates (type "Red Hat Ansible Automation Platform"),
  the decision environment, this repository as an EDA project, and one rulebook
  activation per entry, restarted whenever it stops (``restart_policy: always``: a
  source that gave up must come back, the schedules only cover the gap). Each activation
  is given ``awx_organization``, which its rulebook's ``run_job_template`` actions name.
* Rule awx-safety-net (``schedule_minutes``): a schedule whose reconcile an activation
  also runs repeats at its ``events_every_minutes`` instead of ``every_minutes``: the
  events do the work in seconds, the schedule catches an event that never came.
* Rule awx-activation-settings (``activation_errors``): each activation has a name and a
  rulebook of the collection (``extensions/eda/rulebooks/``), the decision environment
  and its image are named, each ``events_every_minutes`` is 1 to 1440.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError

CONTROLLER_CREDENTIAL_TYPE = "Red Hat Ansible Automation Platform"
MAX_EVERY_MINUTES = 24 * 60
EDA_KINDS = ("eda_credential", "eda_decision_environment", "eda_project", "rulebook_activation")


def activations_on(settings: Mapping[str, Any]) -> bool:
    """Whether the settings ask for rulebook activations."""
    return bool(settings.get("activations_enabled")) and bool(settings.get("activations"))


def schedule_minutes(settings: Mapping[str, Any], schedule: Mapping[str, Any]) -> int:
    """Rule awx-safety-net: the minutes between runs of ``schedule``."""
    if activations_on(settings) and schedule.get("events_every_minutes") is not None:
        return int(schedule["events_every_minutes"])
    return int(schedule["every_minutes"])


def _text_error(field: str, value: object) -> list[FieldError]:
    if isinstance(value, str) and value.strip():
        return []
    return [FieldError(field, f"{value!r} must be a non-empty string")]


def activation_errors(settings: Mapping[str, Any], rulebooks: Iterable[str]) -> list[FieldError]:
    """Rule awx-activation-settings; ``rulebooks``: the collection's rulebook file names."""
    errors: list[FieldError] = []
    for i, sched in enumerate(settings.get("schedules") or []):
        minutes = sched.get("events_every_minutes")
        if minutes is not None and not (
            isinstance(minutes, int)
            and not isinstance(minutes, bool)
            and 1 <= minutes <= MAX_EVERY_MINUTES
        ):
            errors.append(
                FieldError(
                    f"awx_schedules[{i}].events_every_minutes",
                    f"{minutes!r} must be a whole number of minutes, from 1 to {MAX_EVERY_MINUTES}",
                )
            )
    if not activations_on(settings):
        return errors
    errors += _text_error("awx_decision_environment", settings.get("decision_environment"))
    errors += _text_error("awx_de_image", settings.get("de_image"))
    errors += _text_error("awx_controller_credential", settings.get("controller_credential"))
    known = set(rulebooks)
    for i, act in enumerate(settings.get("activations") or []):
        where = f"awx_activations[{i}]"
        errors += _text_error(f"{where}.name", act.get("name"))
        if act.get("rulebook") not in known:
            errors.append(
                FieldError(
                    f"{where}.rulebook",
                    f"{act.get('rulebook')!r} names no rulebook of the collection "
                    f"(extensions/eda/rulebooks/: {', '.join(sorted(known)) or 'none'})",
                )
            )
    return errors


def _obj(kind: str, name: str, /, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "params": {"name": name, **params}}


def eda_objects(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rule awx-activations (see the module docstring); none without activations."""
    if not activations_on(settings):
        return []
    org = settings["organization"]
    inputs = {
        key: settings[f"controller_{key}"]
        for key in ("host", "oauth_token")
        if settings.get(f"controller_{key}")
    }
    out = [
        _obj(
            "eda_credential",
            settings["controller_credential"],
            organization_name=org,
            credential_type_name=CONTROLLER_CREDENTIAL_TYPE,
            description="Launches the platform's AWX job templates from its rulebooks",
            **({"inputs": inputs} if inputs else {}),
        ),
        _obj(
            "eda_decision_environment",
            settings["decision_environment"],
            organization_name=org,
            image_url=settings["de_image"],
            description="Built from de/decision-environment.yml of this repository",
        ),
        _obj(
            "eda_project",
            settings["project"],
            organization_name=org,
            url=settings["project_url"],
            scm_branch=settings.get("project_branch") or "main",
            description="The platform's rulebooks (extensions/eda/rulebooks/)",
        ),
    ]
    for act in settings["activations"]:
        out.append(
            _obj(
                "rulebook_activation",
                act["name"],
                description=act.get("description") or "",
                organization_name=org,
                project_name=settings["project"],
                rulebook_name=act["rulebook"],
                decision_environment_name=settings["decision_environment"],
                eda_credentials=[settings["controller_credential"]],
                extra_vars={"awx_organization": org, **dict(act.get("extra_vars") or {})},
                restart_policy="always",
                state="enabled" if act.get("enabled", True) else "disabled",
            )
        )
    return out
