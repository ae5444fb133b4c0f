# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule run-summary and rule playbook-words through the playbooks, on the local cluster.

Every playbook ends by saying what it did in a few lines (its last task, a debug of a
list of lines); in check mode only what it would do. ``SUMMARIES`` holds what each
playbook's last message must say; ``test_check_mode.py`` runs every playbook in check
mode once and checks it with ``check_summary`` (no second run here). This file runs
only what that one does not: awx_configure.yml's preview, and a refusal through a
playbook, which names the playbook's variable, not the module's option.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    ROOT,
    run_playbook,
)

pytestmark = pytest.mark.integration

T = r"c[kn][0-9a-f]{5}"  # the check-mode test's tenants (ckXXXXX, cnXXXXX)

# playbook -> patterns its last message must match, each on some line, in check mode with
# test_check_mode.py's input.
SUMMARIES: dict[str, list[str]] = {
    "site.yml": [
        r"^spot: \d+ spot queues, \d+ idle GPUs — \d+ would be updated$",
        r"^topology: .*would delete [1-9]",
    ],
    "tenant_create.yml": [
        rf"^tenant {T}: would create \d+ objects \(namespace tenant-{T}\)$",
        r"^subscription 2 GPUs \(cpu 8, memory 16Gi\)",
        rf"^queues tenant-{T}-subscription \(would create\)",
        r"^spot capacity: \d+ idle GPUs of \d+ shared by \d+ spot queues",
    ],
    "tenant_update.yml": [
        rf"^tenant {T}: would update \d+ objects? \(namespace tenant-{T}\)$",
        r"^subscription 3 GPUs \(cpu 12, memory 24Gi\)",
        r"^spot capacity: ",
    ],
    "tenant_delete.yml": [
        rf"^tenant {T}: would update 1 object, would delete \d+ objects$",
        r"^1 active jobs and \d+ active pods would be deleted with it$",
        r"^spot capacity: ",
    ],
    "tenant_catalog.yml": [
        rf"^tenant {T}: would create \d+ objects$",
        rf"^tenant {T}: would update \d+ objects$",
        r"^tenants: 1 would create, 1 would update, \d+ unchanged",
        r"^sale: \d+ -> \d+ of \d+ GPUs sold \(\+\d+\); ",
    ],
    "team_queue.yml": [
        rf"^team extra2 of tenant {T} \(tenant-{T}-extra2\): would create .*; deserves 0 GPUs$"
    ],
    "job_submit.yml": [
        rf"^job tenant-{T}/ck-pb: would be submitted \(single, class normal, 1 pod x 1 GPUs, queue tenant-{T}-algo \(team\)\)$"
    ],
    "payg_scale.yml": [rf"tenant-{T}-payg would grow by 1 GPUs: 1 from the IDC, 0 from the cloud"],
    "payg_reconcile.yml": [r"would shrink to what it uses"],
    "spot_recompute.yml": [
        r"^spot reclaim for spot jobs held GPUs that tenants bought: ",
        r"^spot capacity: ",
    ],
    "throttle_reconcile.yml": [r"^throttled queues after the run would be: "],
    "arbiter_reconcile.yml": [r"^queue arbiter: "],
    "hypernode_sync.yml": [r"^HyperNodes: .*would delete [^;]*ck-stale-"],
    "gpu_health.yml": [r"^GPU health: \d+ unhealthy node\(s\), \d+ to quarantine"],
    "checkpoint_retention.yml": [
        r"^(no tenant checkpoint bucket to sweep|tenant-.*-checkpoints \(tenant )"
    ],
    "node_groups.yml": [r"^node group ck-idc: \d+ nodes$", r"^would write \d+ objects"],
    "inference_deploy.yml": [
        rf"^model service tenant-{T}/ck-model: would be deployed; would run version"
    ],
    "inference_canary.yml": [rf"^model service tenant-{T}/ck-model: canary would be set"],
    "inference_canary_step.yml": [
        rf"^model service tenant-{T}/ck-model2: traffic would be stepped"
    ],
    "inference_promote.yml": [rf"^model service tenant-{T}/ck-model2: canary would be promoted"],
    "inference_rollback.yml": [rf"^model service tenant-{T}/ck-model2: would be rolled back"],
    "usage_report.yml": [
        r"^files: would write /tmp/gpucloud-check-usage-\w+/usage-[\w-]+\.json, \.csv$"
    ],
    # Not run in check mode (it needs an AWX): its preview, below.
    "awx_configure.yml": [],
    # Its connection is a Karmada API server: its check-mode summary is checked in
    # tests/federation/test_federation_member.py.
    "federation_bring_up.yml": [],
    # Likewise: tests/federation/test_federation_jobs.py.
    "federation_reconcile.yml": [],
}

# A past tense that says something was applied: never in check mode, but after "would".
APPLIED = re.compile(
    r"\b(created|updated|deleted|evicted|wrote|written|changed|applied|submitted|reclaimed|shrank|grew)\b"
)


def last_message(tasks: dict[str, dict]) -> list[str]:
    """The last task's message, as lines."""
    name, result = list(tasks.items())[-1]
    msg = result.get("msg")
    if isinstance(msg, str):  # a message of one paragraph (payg_scale.yml, payg_reconcile.yml)
        msg = [" ".join(msg.split())]
    assert isinstance(msg, list) and msg and all(isinstance(line, str) for line in msg), (name, msg)
    return msg


def check_summary(playbook: str, tasks: dict[str, dict], check: bool = True) -> None:
    """The playbook's last message says what SUMMARIES expects, in check mode only what would be done."""
    lines = last_message(tasks)
    for pattern in SUMMARIES[playbook]:
        assert any(re.search(pattern, line) for line in lines), (
            playbook,
            pattern,
            "\n".join(lines),
        )
    if check:
        for line in lines:
            said = re.sub(r"\bwould (be |stay |be held )?\w+", "", line)
            assert not APPLIED.search(said), (playbook, line)


def test_every_playbook_has_its_summary():
    assert set(SUMMARIES) == {p.name for p in (Path(ROOT) / "playbooks").glob("*.yml")}


def test_awx_preview_lists_every_object(ansible_env):
    rc, tasks = run_playbook(ansible_env, "awx_configure.yml", {"awx_preview": True})
    assert rc == 0, tasks
    # The preview's last words; the play then ends (meta end_play prints nothing).
    assert list(tasks)[-1] == "Preview - stop before AWX", list(tasks)
    lines = last_message({k: v for k, v in tasks.items() if k.startswith("Preview - every object")})
    assert "organization: Default" in lines and "project: gpucloud-platform" in lines, lines
    assert any(line.startswith("schedule: Spot - recompute capacity") for line in lines), lines


def test_a_refusal_names_the_playbook_variable(ansible_env):
    """vcjob refuses a pytorch_ddp job without its command (before it connects): through
    job_submit.yml the message names job_command and the playbook, not the option."""
    extra = {
        "tenant_name": "demo-alpha",
        "job_name": "words-1",
        "job_queue": "tenant-demo-alpha-subscription",
        "job_kind": "pytorch_ddp",
        "job_image": "busybox",
    }
    rc, tasks = run_playbook(ansible_env, "job_submit.yml", extra, check=True)
    assert rc != 0
    said = tasks["Say the refusal in the playbook's words"]
    assert said.get("failed"), tasks
    assert said["msg"].startswith("job_command: is required for kind pytorch_ddp"), said["msg"]
    assert said["msg"].endswith("(job_command is a variable of job_submit.yml)"), said["msg"]
    assert "command:" not in said["msg"].replace("job_command:", ""), said["msg"]


def refusal_said(tasks: dict[str, dict], module_task: str) -> str:
    """The rescue's message; the module's own task keeps the module's words."""
    said = tasks["Say the refusal in the playbook's words"]
    assert said.get("failed"), tasks
    assert tasks[module_task].get("failed"), tasks[module_task]
    return said["msg"]


@pytest.fixture(scope="module")
def model_tenants(run_module):
    """Two tenants of the file's own (the suite's cluster has no demo tenants before the docs
    test): words-a with a team queue of 2 GPUs, and words-b, whose queue words-a may not use."""
    made = []
    for name, gpus, teams in (
        ("words-a", 2, [{"name": "algo", "deserved": {"nvidia.com/gpu": 2}}]),
        ("words-b", 1, []),
    ):
        subscription = {"nvidia.com/gpu": gpus, "cpu": "4", "memory": "16Gi"}
        out = run_module("tenant", {"name": name, "subscription": subscription, "teams": teams})
        assert not out.get("failed"), out.get("msg")
        made.append(name)
    yield
    for name in made:
        run_module("tenant", {"name": name, "state": "absent", "force": True})


# inference_deploy.yml's input for words-a, which each case changes in one variable.
MODEL = {
    "tenant": "words-a",
    "inference_name": "words-model",
    "inference_queue": "tenant-words-a-algo",
    "inference_version": "v1",
    "inference_format": "sklearn",
    "inference_storage_uri": "s3://models/words/v1",
    "inference_gpus": 0,
}


@pytest.mark.parametrize(
    ("given", "option", "said"),
    [
        # before the cluster is read
        ({"inference_gpus": -1}, "model.gpus: ", "inference_gpus: -1 must be a whole number >= 0"),
        # rule leaf-queue-of-tenant, from the tenant's queue list
        (
            {"inference_queue": "tenant-words-b-payg"},
            "queue: ",
            "inference_queue: 'tenant-words-b-payg' is another tenant's queue name",
        ),
        # rule inference-gpus-within-capability, from the queue's capability on the way to root
        (
            {"inference_gpus": 100000},
            "model.gpus: ",
            "inference_gpus: the service needs 100000 GPUs at its minimum (1 x 100000 for v1), "
            "above the capability of queue tenant-words-a-algo",
        ),
    ],
    ids=["gpus-below-0", "queue-of-another-tenant", "gpus-above-capability"],
)
def test_an_inference_refusal_names_the_playbook_variable(
    ansible_env, model_tenants, given, option, said
):
    """inference_service refuses before any write: through inference_deploy.yml the message
    names the playbook's variable (inference_gpus for the field model.gpus) and the playbook."""
    rc, tasks = run_playbook(ansible_env, "inference_deploy.yml", {**MODEL, **given}, check=True)
    assert rc != 0
    msg = refusal_said(tasks, "Deploy, and wait until Ready")
    variable = said.split(":")[0]
    assert msg.startswith(said), msg
    assert msg.endswith(f"({variable} is a variable of inference_deploy.yml)"), msg
    assert tasks["Deploy, and wait until Ready"]["msg"].startswith(option)
    assert "Say what the run did" not in tasks


@pytest.mark.parametrize(
    ("selector", "module_task", "said"),
    [
        # rule node-selector, before the first request (spot_reclaim, the first task)
        (
            {"platform.io/pool": "main,platform.io/gpu=a100"},
            "Delete the spot jobs that hold GPUs spot may not hold (spot_offer), cheapest first",
            "spot_node_selector.platform.io/pool: 'main,platform.io/gpu=a100' is not a label value",
        ),
        # rule spot-pool-not-empty (spot_capacity, the second task)
        (
            {"platform.io/pool": "words-no-such-pool"},
            "Set every spot queue's capability to its tenant's share of the idle pool",
            "spot_node_selector: {'platform.io/pool': 'words-no-such-pool'} matches 0 node(s)",
        ),
    ],
    ids=["selector-value", "selector-empty-pool"],
)
def test_a_spot_refusal_names_the_playbook_variable(ansible_env, selector, module_task, said):
    """Both modules of spot_recompute.yml take node_selector; the caller set spot_node_selector."""
    rc, tasks = run_playbook(
        ansible_env, "spot_recompute.yml", {"spot_node_selector": selector}, check=True
    )
    assert rc != 0
    msg = refusal_said(tasks, module_task)
    assert msg.startswith(said), msg
    assert msg.endswith("(spot_node_selector is a variable of spot_recompute.yml)"), msg
    assert tasks[module_task]["msg"].startswith("node_selector")
