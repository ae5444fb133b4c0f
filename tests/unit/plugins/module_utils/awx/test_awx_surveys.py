# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules playbook-variables and survey-variables, and every survey of awx/surveys.yml
against the playbook it launches."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpucloud.platform.plugins.module_utils.awx.surveys import (
    playbook_variables,
    survey_errors,
)

ROOT = Path(__file__).resolve().parents[5]
SURVEYS = yaml.safe_load((ROOT / "awx" / "surveys.yml").read_text())


def plays(name: str):
    return yaml.safe_load((ROOT / "playbooks" / f"{name}.yml").read_text())


def test_playbook_variables_reads_play_vars_and_argument_specs():
    play = [
        {
            "vars": {"a": 1, "b": ""},
            "tasks": [
                {
                    "block": [
                        {
                            "ansible.builtin.validate_argument_spec": {
                                "argument_spec": {
                                    "b": {"required": True},
                                    "c": {"required": True},
                                    "d": {"type": "int"},
                                }
                            }
                        }
                    ]
                }
            ],
        }
    ]
    # b has a play default, so it is not required; c has none.
    assert playbook_variables(play) == {"a": False, "b": False, "c": True, "d": False}


def test_playbook_variables_reads_the_spec_handed_to_the_shared_check():
    play = [
        {
            "vars": {"a": 1},
            "tasks": [
                {
                    "name": "Refuse misspelt variables, then check them",
                    "ansible.builtin.import_tasks": "tasks/check_variables.yml",
                    "vars": {
                        "check_variables_known": ["a_result"],
                        "check_variables_spec": {"a": {"required": True}, "b": {"required": True}},
                    },
                }
            ],
        }
    ]
    assert playbook_variables(play) == {"a": False, "b": True}


def test_survey_errors_name_the_question_and_the_rule():
    variables = {"tenant_name": True, "tenant_gpus": False}
    survey = {
        "spec": [
            {"variable": "tenant_gpus", "required": False},
            {"variable": "tenant_typo", "required": True},
            {"variable": "tenant_gpus", "required": False},
        ]
    }
    assert [str(e) for e in survey_errors("tenant_update", survey, variables)] == [
        "awx_surveys.tenant_update.spec[1].variable: 'tenant_typo' is not a variable of "
        "playbooks/tenant_update.yml (rule survey-variables)",
        "awx_surveys.tenant_update.spec[2].variable: 'tenant_gpus' is asked twice",
        "awx_surveys.tenant_update: playbooks/tenant_update.yml requires 'tenant_name', which "
        "the survey does not ask as a required question (rule survey-variables)",
    ]


@pytest.mark.parametrize("playbook", sorted(SURVEYS))
def test_every_survey_matches_its_playbook(playbook):
    assert survey_errors(playbook, SURVEYS[playbook], playbook_variables(plays(playbook))) == []


def test_the_update_survey_asks_for_what_it_promises_and_payg_scale_has_one():
    """Tenant - update promises pay-as-you-go and team changes."""
    asked = {q["variable"] for q in SURVEYS["tenant_update"]["spec"]}
    assert {"tenant_payg_gpus", "tenant_teams"} <= asked
    assert "payg_scale" in SURVEYS
