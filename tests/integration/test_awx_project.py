# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repository as AWX syncs it: a plain checkout (what git tracks, no .venv, so no
link to the checkout on any collection path), collections/requirements.yml installed
into the job's collection folder as AWX's project update installs it, then a playbook
run from the checkout with that folder as the collection path, as an AWX job runs it.
The playbook resolves the collection's modules from the installed copy and runs against
the local cluster (check mode: it writes nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def checkout(dest: Path) -> Path:
    """What git tracks (and untracked, not ignored files), as a project sync has it."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    project = dest / "project"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if not source.is_file():
            continue
        target = project / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        target.chmod(source.stat().st_mode)
    return project


@pytest.fixture(scope="module")
def awx_job(tmp_path_factory, kubeconfig):
    """A plain checkout synced as an AWX project, and ``job(*args)``: ``ansible-playbook``
    run in the checkout (its working directory, as an AWX job runs) with the installed
    collection folder first, returning the finished process; with ``installed`` (that
    folder) and ``project`` (the checkout)."""
    tmp_path = tmp_path_factory.mktemp("awx")
    project = checkout(tmp_path)
    assert not (project / ".venv").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONPATH"))}
    env |= {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1"}
    installed = tmp_path / "requirements_collections"
    # AWX's project update: `ansible-galaxy collection install -r requirements.yml -p ...`
    # from the project. --offline: kubernetes.core and awx.awx come with the ansible
    # package here, as they do in an execution environment.
    install = ["collection", "install", "--offline", "-r", "collections/requirements.yml"]
    sync = subprocess.run(
        [BIN / "ansible-galaxy", *install, "-p", str(installed)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert sync.returncode == 0, sync.stdout + sync.stderr
    assert (installed / "ansible_collections" / "gpucloud" / "platform" / "MANIFEST.json").is_file()
    # The job: the project's ansible.cfg, the collection folder AWX puts first; deprecation
    # warnings on, as ansible-core's default has them.
    env |= {
        "ANSIBLE_COLLECTIONS_PATH": str(installed),
        "K8S_AUTH_KUBECONFIG": kubeconfig,
        "ANSIBLE_DEPRECATION_WARNINGS": "true",
    }

    def job(*args: str, **extra_env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [BIN / "ansible-playbook", *args],
            cwd=project,
            env=env | extra_env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )

    return SimpleNamespace(run=job, installed=installed, project=project)


def test_a_plain_checkout_runs_its_playbooks_as_an_awx_project(awx_job):
    job = awx_job.run("playbooks/spot_recompute.yml", "--check", "-vvv")
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-2000:]
    module = (
        awx_job.installed / "ansible_collections" / "gpucloud" / "platform" / "plugins" / "modules"
    )
    assert f"Using module file {module}/spot_capacity.py" in job.stderr + job.stdout
    recap = job.stdout[job.stdout.index("PLAY RECAP") :]
    assert "failed=0" in recap and "unreachable=0" in recap, recap
    # spot_reclaim and spot_capacity on ansible-core 2.19: no deprecation warning
    assert "DEPRECATION" not in job.stdout + job.stderr, job.stderr[-2000:]


def schedule_extra_vars(name: str) -> dict:
    """The extra vars of the AWX schedule ``name`` as playbooks/awx_configure.yml declares it."""
    play = yaml.safe_load((ROOT / "playbooks" / "awx_configure.yml").read_text())[0]
    (schedule,) = [s for s in play["vars"]["awx_schedules"] if s["name"] == name]
    return schedule.get("extra_vars") or {}


def test_the_catalog_schedule_reads_its_file_from_the_checkout(awx_job):
    """Rule catalog-path: "Tenant catalog - reconcile" runs tenant_catalog.yml with the
    project checkout as its working directory and a catalog path relative to it; the run
    (check mode: it writes nothing) reads the file and lists the catalog's tenants."""
    extra_vars = schedule_extra_vars("Tenant catalog - reconcile")
    catalog = awx_job.project / extra_vars["tenant_catalog_file"]
    assert catalog.is_file()
    declared = [t["name"] for t in yaml.safe_load(catalog.read_text())["tenants"]]
    job = awx_job.run(
        "playbooks/tenant_catalog.yml",
        "--check",
        "-e",
        json.dumps(extra_vars),
        ANSIBLE_STDOUT_CALLBACK="json",
    )
    output = job.stdout + job.stderr
    assert "cannot read" not in output and "No such file" not in output, output[-3000:]
    assert job.returncode == 0, output[-3000:]
    assert "DEPRECATION" not in job.stderr, job.stderr[-2000:]
    tasks = {
        t["task"]["name"]: t["hosts"].get("localhost", {})
        for play in json.loads(job.stdout)["plays"]
        for t in play["tasks"]
    }
    converged = tasks["Converge every tenant to the catalog"]
    rows = {row["name"]: row["status"] for row in converged["summary"]}
    assert set(declared) <= set(rows), rows


def test_the_catalog_renders_into_a_directory_relative_to_the_caller(awx_job):
    """Rule catalog-path for ``state: rendered``: the render directory, given relative, is
    made in the caller's working directory (the checkout), not under playbooks/."""
    job = awx_job.run(
        "playbooks/tenant_catalog.yml",
        "-e",
        json.dumps(
            {
                "tenant_catalog_state": "rendered",
                "tenant_catalog_file": "inventories/production/tenants.yml",
                "tenant_catalog_pod_cidr": "10.244.0.0/16",
                "tenant_catalog_service_cidr": "10.96.0.0/12",
                "tenant_catalog_render_dir": "gitops/tenants",
            }
        ),
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-2000:]
    out = awx_job.project / "gitops" / "tenants"
    catalog = yaml.safe_load((awx_job.project / "inventories/production/tenants.yml").read_text())
    # one file per tenant, and the shared parent-queues list (its tenants have teams)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{t['name']}.yaml" for t in catalog["tenants"]] + ["platform-shared.yaml"]
    )
    assert not (awx_job.project / "playbooks" / "gitops").exists()
