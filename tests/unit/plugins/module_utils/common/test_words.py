# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule playbook-words: a module's refusal said in the playbook's variables."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.playbook_words import playbook_words
from ansible_collections.gpucloud.platform.plugins.module_utils.common.words import (
    in_playbook_words,
)

TENANT = {
    "subscription.nvidia.com/gpu": "tenant_gpus",
    "subscription": "tenant_subscription",
    "teams": "tenant_teams",
    "force": "tenant_force",
    "name": "tenant_name",
}


def test_an_instruction_to_set_an_option_names_the_variable_and_the_playbook():
    msg = "tenant 'x' still has 1 active Volcano Job(s); wait for them, or force: true to delete the tenant anyway"
    assert in_playbook_words(msg, {"force": "tenant_force"}, "tenant_delete.yml") == (
        "tenant 'x' still has 1 active Volcano Job(s); wait for them, or tenant_force=true to delete the "
        "tenant anyway (tenant_force is a variable of tenant_delete.yml)"
    )


def test_fields_at_the_start_of_each_error_become_variables_longest_first():
    msg = (
        "subscription.nvidia.com/gpu: 30 exceeds the pool; "
        "teams[1].deserved.nvidia.com/gpu: 4 is below the 8 queue tenant-a-algo has allocated right now; "
        "give at least 8, or force: true to shrink it anyway"
    )
    assert in_playbook_words(msg, TENANT, "tenant_update.yml") == (
        "tenant_gpus: 30 exceeds the pool; "
        "tenant_teams[1].deserved.nvidia.com/gpu: 4 is below the 8 queue tenant-a-algo has allocated right now; "
        "give at least 8, or tenant_force=true to shrink it anyway "
        "(tenant_force, tenant_gpus and tenant_teams are variables of tenant_update.yml)"
    )


def test_words_inside_a_sentence_and_unmapped_messages_are_left_alone():
    msg = "tenant name 'x' is taken; the queue's force is spent: nothing to do"
    assert in_playbook_words(msg, TENANT, "tenant_create.yml") == msg
    assert in_playbook_words("command: is required", {}, "job_submit.yml") == "command: is required"


def test_the_filter_reads_a_failed_result():
    result = {"failed": True, "msg": "command: is required for kind pytorch_ddp"}
    assert playbook_words(result, {"command": "job_command"}, "job_submit.yml") == (
        "job_command: is required for kind pytorch_ddp (job_command is a variable of job_submit.yml)"
    )
    with pytest.raises(AnsibleFilterError):
        playbook_words(result, ["command"])
