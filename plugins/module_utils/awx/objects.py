# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX objects that run this collection, as data (pure: no I/O, no AWX).

``playbooks/awx_configure.yml`` applies them with the awx.awx modules, or prints them
(``awx_preview``) without an AWX. Each object is ``{"kind": <awx.awx module>, "name":
..., "params": {...}}``; ``params`` are that module's own option names, so the playbook
passes them through.

Rules held here:

* Rule awx-objects (``awx_objects``): everything a job needs, in the order AWX needs
  it: the organization; the credential type "Kubernetes kubeconfig (gpucloud)" (its
  input is the kubeconfig, injected as a file whose path is ``K8S_AUTH_KUBECONFIG``,
  the variable kubernetes.core reads); the credential of that type; the execution
  environment; the project (this repository, synced on launch: AWX installs
  ``collections/requirements.yml`` from it); the inventory and its source (an
  inventory file of the project); a job template per survey and per schedule, each
  with the execution environment, the credential and a timeout (a scheduled reconcile
  never runs twice at once); a schedule per scheduled reconcile (at its
  ``events_every_minutes`` when an activation runs it too: rule awx-safety-net); then
  the Event-Driven Ansible controller's objects, when activations are asked for (rule
  awx-activations, ``awx/activations.py``).
* Rule awx-settings (``awx_settings_errors``): every name a non-empty string, the
  project's URL given, each schedule's interval 1 to 1440 minutes, each timeout 0 or
  more seconds (0: none), each survey and schedule naming a playbook of the project, a
  schedule's own ``start`` (when it has one) an iCalendar UTC date-time such as
  ``20260101T003000Z``.
* Rule awx-secret-preview (``preview``): a credential's inputs, when given, are shown as
  their length, never their content.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError
from .activations import EDA_KINDS, activation_errors, eda_objects, schedule_minutes

KUBECONFIG_CREDENTIAL_TYPE = "Kubernetes kubeconfig (gpucloud)"
# AWX renders these templates when it injects the credential, not Ansible: they reach
# AWX as plain text (a filter's result is never templated again).
KUBECONFIG_INJECTORS = {
    "file": {"template.kubeconfig": "{{ kubeconfig }}"},
    "env": {"K8S_AUTH_KUBECONFIG": "{{ tower.filename.kubeconfig }}"},
}
KUBECONFIG_INPUTS = {
    "fields": [
        {
            "id": "kubeconfig",
            "type": "string",
            "label": "Kubeconfig",
            "secret": True,
            "multiline": True,
            "help_text": "The kubeconfig of the platform's service account (not a tenant's).",
        }
    ],
    "required": ["kubeconfig"],
}
MAX_EVERY_MINUTES = 24 * 60
ICAL_UTC = re.compile(r"^[0-9]{8}T[0-9]{6}Z$")
# The settings that must be non-empty text (rule awx-settings), in the order reported.
NAMED_SETTINGS = (
    "organization",
    "project",
    "inventory",
    "execution_environment",
    "credential",
    "project_url",
    "ee_image",
    "inventory_file",
)
KINDS = (
    "organization",
    "credential_type",
    "credential",
    "execution_environment",
    "project",
    "inventory",
    "inventory_source",
    "job_template",
    "schedule",
    *EDA_KINDS,
)


def _obj(module: str, name: str, /, **params: Any) -> dict[str, Any]:
    """One object; ``module`` is its awx.awx module (``params`` may hold a ``kind`` of its own)."""
    return {"kind": module, "name": name, "params": {"name": name, **params}}


def _name_errors(field: str, value: object) -> list[FieldError]:
    if isinstance(value, str) and value.strip():
        return []
    return [FieldError(field, f"{value!r} must be a non-empty string")]


def _whole_errors(
    field: str, value: object, what: str, low: int, high: int | None = None
) -> list[FieldError]:
    """``value`` a whole number from ``low`` (to ``high``), else one error naming it."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    ):
        return []
    bound = f"from {low} to {high}" if high is not None else f"{low} or more"
    return [FieldError(field, f"{value!r} must be a whole number of {what}, {bound}")]


def awx_settings_errors(
    settings: Mapping[str, Any],
    surveys: Mapping[str, Any],
    playbooks: Iterable[str],
) -> list[FieldError]:
    """Rule awx-settings (see the module docstring); ``playbooks``: the project's
    playbooks, without ``.yml``."""
    known = set(playbooks)
    errors: list[FieldError] = []
    for field in NAMED_SETTINGS:
        errors += _name_errors(f"awx_{field}", settings.get(field))
    errors += _whole_errors("awx_job_timeout", settings.get("job_timeout"), "seconds", 0)
    for key in surveys:
        if key not in known:
            errors.append(
                FieldError(
                    f"awx_surveys.{key}", f"names no playbook of the project (playbooks/{key}.yml)"
                )
            )
    for i, sched in enumerate(settings.get("schedules") or []):
        where = f"awx_schedules[{i}]"
        if sched.get("playbook") not in known:
            errors.append(
                FieldError(
                    f"{where}.playbook",
                    f"{sched.get('playbook')!r} names no playbook of the project",
                )
            )
        errors += _whole_errors(
            f"{where}.every_minutes", sched.get("every_minutes"), "minutes", 1, MAX_EVERY_MINUTES
        )
        errors += _whole_errors(f"{where}.timeout", sched.get("timeout", 0), "seconds", 0)
        start = sched.get("start")
        if start is not None and not (isinstance(start, str) and ICAL_UTC.match(start)):
            errors.append(
                FieldError(
                    f"{where}.start",
                    f"{start!r} is not an iCalendar UTC date-time such as 20260101T003000Z",
                )
            )
    errors = [FieldError(e.field, f"{e.message} (rule awx-settings)") for e in errors]
    return errors + [
        FieldError(e.field, f"{e.message} (rule awx-activation-settings)")
        for e in activation_errors(settings, settings.get("rulebooks") or ())
    ]


def _template(
    settings: Mapping[str, Any], name: str, playbook: str, **extra: Any
) -> dict[str, Any]:
    return _obj(
        "job_template",
        name,
        job_type="run",
        organization=settings["organization"],
        project=settings["project"],
        inventory=settings["inventory"],
        playbook=f"playbooks/{playbook}.yml",
        execution_environment=settings["execution_environment"],
        credentials=[settings["credential"], *settings.get("extra_credentials", [])],
        **extra,
    )


def awx_objects(settings: Mapping[str, Any], surveys: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rule awx-objects (see the module docstring). ``settings`` is checked first with
    ``awx_settings_errors``."""
    return [
        *_foundation_objects(settings),
        *_survey_templates(settings, surveys),
        *_schedule_templates(settings),
        *_schedules(settings),
        *eda_objects(settings),
    ]


def _foundation_objects(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What every job template needs, in the order AWX needs it: the organization, the
    kubeconfig credential type and credential, the execution environment, the project,
    the inventory and its source."""
    org = settings["organization"]
    return [
        _obj("organization", org, description="The GPU platform's operations"),
        _obj(
            "credential_type",
            KUBECONFIG_CREDENTIAL_TYPE,
            kind="cloud",
            description="A kubeconfig, injected as a file and K8S_AUTH_KUBECONFIG (kubernetes.core)",
            inputs=KUBECONFIG_INPUTS,
            injectors=KUBECONFIG_INJECTORS,
        ),
        _obj(
            "credential",
            settings["credential"],
            organization=org,
            credential_type=KUBECONFIG_CREDENTIAL_TYPE,
            # The secret only when the caller gives it; awx_configure.yml reads it from
            # awx_kubeconfig_file in the task that writes the credential (no_log there).
            **(
                {"inputs": {"kubeconfig": settings["kubeconfig"]}}
                if settings.get("kubeconfig")
                else {}
            ),
        ),
        _obj(
            "execution_environment",
            settings["execution_environment"],
            organization=org,
            image=settings["ee_image"],
            pull="missing",
            description="Built from execution-environment.yml of this repository",
        ),
        _obj(
            "project",
            settings["project"],
            organization=org,
            scm_type="git",
            scm_url=settings["project_url"],
            scm_branch=settings.get("project_branch") or "main",
            scm_update_on_launch=True,
            default_environment=settings["execution_environment"],
        ),
        _obj("inventory", settings["inventory"], organization=org),
        _obj(
            "inventory_source",
            f"{settings['inventory']} - {settings['inventory_file']}",
            inventory=settings["inventory"],
            organization=org,
            source="scm",
            source_project=settings["project"],
            source_path=settings["inventory_file"],
            update_on_launch=True,
            overwrite=True,
        ),
    ]


def _survey_templates(
    settings: Mapping[str, Any], surveys: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """A job template per survey (``surveys``: playbook -> survey), at the job timeout."""
    out: list[dict[str, Any]] = []
    timeout = settings["job_timeout"]
    for playbook, survey in surveys.items():
        out.append(
            _template(
                settings,
                survey["name"],
                playbook,
                description=survey["description"],
                timeout=timeout,
                ask_diff_mode_on_launch=True,
                ask_job_type_on_launch=True,
                survey_enabled=True,
                survey_spec={
                    "name": survey["name"],
                    "description": survey["description"],
                    "spec": survey["spec"],
                },
            )
        )
    return out


def _schedule_templates(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A job template per scheduled reconcile, never two runs at once."""
    out: list[dict[str, Any]] = []
    timeout = settings["job_timeout"]
    for sched in settings.get("schedules") or []:
        out.append(
            _template(
                settings,
                sched["name"],
                sched["playbook"],
                description=sched["description"],
                timeout=sched.get("timeout", timeout),
                allow_simultaneous=False,
                **({"extra_vars": dict(sched["extra_vars"])} if sched.get("extra_vars") else {}),
            )
        )
    return out


def _schedules(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A schedule per scheduled reconcile, at ``schedule_minutes`` (rule awx-safety-net)."""
    org = settings["organization"]
    out: list[dict[str, Any]] = []
    for sched in settings.get("schedules") or []:
        out.append(
            _obj(
                "schedule",
                sched["name"],
                description=sched["description"],
                organization=org,
                unified_job_template=sched["name"],
                rrule=f"DTSTART:{sched.get('start') or settings['schedule_start']} "
                f"RRULE:FREQ=MINUTELY;INTERVAL={schedule_minutes(settings, sched)}",
                enabled=bool(settings.get("schedules_enabled", True)),
            )
        )
    return out


def preview(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rule awx-secret-preview: the objects with each credential's inputs shown as
    ``<secret: N characters>`` (empty: ``<not set>``)."""
    out = []
    for obj in objects:
        if obj["kind"] in ("credential", "eda_credential") and "inputs" in obj["params"]:
            inputs = {
                k: f"<secret: {len(v)} characters>" if v else "<not set>"
                for k, v in obj["params"].get("inputs", {}).items()
            }
            obj = {**obj, "params": {**obj["params"], "inputs": inputs}}
        out.append(dict(obj))
    return out
