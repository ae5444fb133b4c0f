# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The repository as AWX syncs it: a plain checkout (what git tracks, no .venv, so no
link to the checkout on any collection path), collections/requirements.yml installed
into the job's collection folder as AWX's project update installs it, then a playbook
run from the checkout with that folder as the collection path, as an AWX job runs it.
The playbook resolves the collection's modules from the installed copy and runs against
the local cluster (check mode: it writes nothing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_plain_checkout_runs_its_playbooks_as_an_awx_project(tmp_path, kubeconfig):
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
    # The job: the project's ansible.cfg, the collection folder AWX puts first.
    env |= {
        "ANSIBLE_COLLECTIONS_PATH": str(installed),
        "K8S_AUTH_KUBECONFIG": kubeconfig,
    }
    job = subprocess.run(
        [BIN / "ansible-playbook", "playbooks/spot_recompute.yml", "--check", "-vvv"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-2000:]
    module = installed / "ansible_collections" / "gpucloud" / "platform" / "plugins" / "modules"
    assert f"Using module file {module}/spot_capacity.py" in job.stderr + job.stdout
    recap = job.stdout[job.stdout.index("PLAY RECAP") :]
    assert "failed=0" in recap and "unreachable=0" in recap, recap
