# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule playbook-variables in every playbook but site.yml: run as AWX runs it, with the
local inventory, one misspelt variable among right ones stops it at its first task,
naming the variable and the one it meant, before anything is read."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import (
    ROOT,
    run_playbook,
)

pytestmark = pytest.mark.integration

# playbook -> (right variables, the misspelt one, the one it meant)
CASES: dict[str, tuple[dict, str, str]] = {
    "arbiter_reconcile.yml": ({}, "arbiter_tenat", "arbiter_tenant"),
    "awx_configure.yml": ({"awx_preview_file": "/tmp/awx.yml"}, "awx_preveiw", "awx_preview"),
    "federation_bring_up.yml": (
        {"federation_members": [{"name": "m", "location": "idc", "kubeconfig": "/k"}]},
        "federation_cloud_burst_gpu",
        "federation_cloud_burst_gpus",
    ),
    "federation_reconcile.yml": (
        {},
        "federation_reconcile_namespace",
        "federation_reconcile_namespaces",
    ),
    "gpu_health.yml": ({}, "gpu_health_max_quarantin", "gpu_health_max_quarantine"),
    "hypernode_sync.yml": (
        {"hypernode_sync_source": "labels"},
        "hypernode_sync_max_deletons",
        "hypernode_sync_max_deletions",
    ),
    "inference_canary.yml": (
        {"tenant": "alpha", "inference_name": "llm", "inference_version": "v2"},
        "inference_traffic_percnt",
        "inference_traffic_percent",
    ),
    "inference_canary_step.yml": (
        {"tenant": "alpha", "inference_name": "llm"},
        "inference_verison",
        "inference_version",
    ),
    "inference_deploy.yml": (
        {"tenant": "alpha", "inference_name": "llm", "inference_version": "v1"},
        "inference_storage_ur",
        "inference_storage_uri",
    ),
    "inference_promote.yml": ({"tenant": "alpha"}, "inference_nmae", "inference_name"),
    "inference_rollback.yml": (
        {"tenant": "alpha", "inference_name": "llm"},
        "inference_versoin",
        "inference_version",
    ),
    "job_submit.yml": (
        {"tenant_name": "alpha", "job_name": "ddp-1", "job_kind": "single"},
        "job_gpu_per_pod",
        "job_gpus_per_pod",
    ),
    "node_groups.yml": ({}, "platform_node_group", "platform_node_groups"),
    # spot_node_selector is its only variable
    "payg_reconcile.yml": ({}, "spot_node_selecter", "spot_node_selector"),
    "payg_scale.yml": ({"tenant": "alpha"}, "payg_reson", "payg_reason"),
    "spot_recompute.yml": ({}, "spot_reclaim_sld", "spot_reclaim_sold"),
    "team_queue.yml": (
        {"tenant_name": "alpha", "team_name": "research"},
        "team_deserved_gpu",
        "team_deserved_gpus",
    ),
    "tenant_catalog.yml": (
        {"tenant_catalog_prune": True},
        "tenant_catalg_file",
        "tenant_catalog_file",
    ),
    "tenant_create.yml": ({"tenant_name": "alpha", "tenant_cpu": "8"}, "tenant_gpu", "tenant_gpus"),
    "tenant_delete.yml": ({"tenant_name": "alpha"}, "tenant_confrim", "tenant_confirm"),
    "tenant_update.yml": (
        {"tenant_name": "alpha", "tenant_gpus": 8},
        "tenant_payg_gpu",
        "tenant_payg_gpus",
    ),
    "throttle_reconcile.yml": ({}, "throttle_timout", "throttle_timeout"),
    "checkpoint_retention.yml": ({}, "checkpoint_retention_kep", "checkpoint_retention_keep"),
    "usage_report.yml": ({"usage_start": "2026-01-01T00:00:00Z"}, "usage_tenant", "usage_tenants"),
}


def test_every_playbook_but_site_is_tried_with_a_misspelt_variable():
    """site.yml is left out: its variables are the defaults of every role it runs."""
    playbooks = {p.name for p in (ROOT / "playbooks").glob("*.yml")} - {"site.yml"}
    assert set(CASES) == playbooks


@pytest.mark.parametrize("playbook", sorted(CASES))
def test_a_misspelt_variable_stops_the_playbook_at_its_first_task(playbook, ansible_env):
    right, misspelt, meant = CASES[playbook]
    # the value of the variable it meant, as a caller would give it
    value = {"spot_node_selecter": {"platform.io/pool": "main"}, "platform_node_group": []}
    extra = {**right, misspelt: value.get(misspelt, "1")}
    rc, tasks = run_playbook(ansible_env, playbook, extra, inventory="inventories/local")
    assert rc != 0
    failed = {name: result.get("msg") for name, result in tasks.items() if result.get("failed")}
    # only the misspelt variable is named: the right ones and the inventory's pass
    assert failed == {
        "Refuse misspelt variables": (
            f"{misspelt}: not a variable of {playbook}; did you mean {meant}? "
            "(rule playbook-variables)"
        )
    }
    # nothing after the check ran: nothing was read
    assert list(tasks) == ["Refuse misspelt variables"]
