# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX surveys against the playbooks they launch (pure: the caller parses the YAML).

A survey answer becomes an extra variable of the playbook. A question for a variable
the playbook never reads is a promise the job does not keep; a variable the playbook
requires and the survey never asks fails every launch.

Rules held here:

* Rule playbook-variables (``playbook_variables``): what a playbook takes, from its
  plays' ``vars`` (each has a default) and from every argument spec: an
  ``ansible.builtin.validate_argument_spec`` task's (in blocks too), or the
  ``check_variables_spec`` a task hands ``playbooks/tasks/check_variables.yml``, whose
  ``required: true`` entries without a play default are required.
* Rule survey-variables (``survey_errors``): every survey question's variable is one the
  playbook takes, asked once; every variable it requires is asked, as a required
  question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..common.errors import FieldError

VALIDATE = ("ansible.builtin.validate_argument_spec", "validate_argument_spec")
# The variable in which a playbook hands its argument spec to the shared check
# (playbooks/tasks/check_variables.yml), which validates it.
CHECK_SPEC = "check_variables_spec"


def _tasks(tasks: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for task in tasks or []:
        if not isinstance(task, Mapping):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key) or [])


def _specs(task: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for key in VALIDATE:
        if key in task:
            yield (task.get(key) or {}).get("argument_spec") or {}
    yield (task.get("vars") or {}).get(CHECK_SPEC) or {}


def playbook_variables(plays: Iterable[Mapping[str, Any]]) -> dict[str, bool]:
    """Rule playbook-variables: variable -> required (no default, ``required: true``)."""
    defaults: set[str] = set()
    specs: dict[str, bool] = {}
    for play in plays or []:
        defaults |= set((play.get("vars") or {}).keys())
        for task in _tasks([*(play.get("pre_tasks") or []), *(play.get("tasks") or [])]):
            for spec in _specs(task):
                for name, option in spec.items():
                    specs[name] = specs.get(name, False) or bool((option or {}).get("required"))
    out = {name: False for name in defaults}
    for name, required in specs.items():
        out[name] = required and name not in defaults
    return out


def survey_errors(
    playbook: str, survey: Mapping[str, Any], variables: Mapping[str, bool]
) -> list[FieldError]:
    """Rule survey-variables (see the module docstring)."""
    where = f"awx_surveys.{playbook}"
    errors: list[FieldError] = []
    asked: dict[str, bool] = {}
    for i, question in enumerate(survey.get("spec") or []):
        var = question.get("variable")
        if var in asked:
            errors.append(FieldError(f"{where}.spec[{i}].variable", f"{var!r} is asked twice"))
        asked[var] = bool(question.get("required"))
        if var not in variables:
            errors.append(
                FieldError(
                    f"{where}.spec[{i}].variable",
                    f"{var!r} is not a variable of playbooks/{playbook}.yml (rule survey-variables)",
                )
            )
    for var, required in sorted(variables.items()):
        if required and not asked.get(var):
            errors.append(
                FieldError(
                    where,
                    f"playbooks/{playbook}.yml requires {var!r}, which the survey does not ask "
                    "as a required question (rule survey-variables)",
                )
            )
    return errors
