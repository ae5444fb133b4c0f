# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The execution environment's build context, made without a container engine
(scripts/ee-context, ansible-builder create), and what the image's build would install:
its galaxy stage replayed offline from the context, and ansible-builder's introspection
of the installed collection (the Python and system requirements it adds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("ee") / "context"
    helm = tmp_path_factory.mktemp("bin") / "helm"
    helm.write_text("#!/bin/sh\necho v3.21.0\n")
    helm.chmod(0o755)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = subprocess.run(
        [ROOT / "scripts" / "ee-context", "--context", str(where), "--helm", str(helm)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return where


def test_the_context_holds_the_collection_helm_and_the_pins(context):
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==2.19.14 ansible-runner==2.4.3"' in containerfile
    assert "COPY _build/platform/helm /usr/local/bin/helm" in containerfile
    assert "introspect.py introspect" in containerfile
    build = context / "_build"
    assert (build / "platform" / "gpucloud-platform.tar.gz").stat().st_size > 0
    assert os.access(build / "platform" / "helm", os.X_OK)
    wanted = yaml.safe_load((build / "requirements.yml").read_text())["collections"]
    assert [c["name"] for c in wanted] == [
        "platform/gpucloud-platform.tar.gz",
        "kubernetes.core",
        "awx.awx",
    ]
    # The checkout is left as it is: the definition was staged elsewhere.
    assert not (ROOT / "ee" / "files").exists()


def test_the_galaxy_stage_and_introspection_give_the_collection_s_requirements(context, tmp_path):
    """As the image's galaxy stage runs it (in _build), offline: kubernetes.core and
    awx.awx come with the ansible package here; then what introspection adds."""
    installed = tmp_path / "collections"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    install = ["collection", "install", "--offline", "-r", "requirements.yml"]
    galaxy = subprocess.run(
        [BIN / "ansible-galaxy", *install, "-p", str(installed)],
        cwd=context / "_build",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert galaxy.returncode == 0, galaxy.stdout + galaxy.stderr
    assert (installed / "ansible_collections" / "gpucloud" / "platform" / "MANIFEST.json").is_file()
    found = subprocess.run(
        [BIN / "ansible-builder", "introspect", str(installed)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = yaml.safe_load(found.split("---", 1)[1])
    python = [line.split("#")[0].strip() for line in data["python"]]
    assert {"kubernetes>=30.1.0", "jsonpatch>=1.33"} <= set(python)
    assert any(line.startswith("graphviz") for line in data["system"])
