# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Galaxy artifact as a user gets it: built from the checkout, installed into an
empty path, and used from there only (no checkout on the collection path, no ansible.cfg
of the repo): ansible-doc on every plugin and role, a module and a filter end to end,
and the shipped unit tests importable from the installed copy. Also: the versions and
requirements the checkout states agree with each other.

Not shipped (galaxy.yml build_ignore), so not run from an installed copy: this file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODULES = sorted(
    p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__"
)
FILTERS = sorted(
    p.stem for p in (ROOT / "plugins" / "filter").glob("*.yml")
)  # one documentation file per filter
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta").is_dir())
# What only a checkout needs or what lint and tests leave behind.
NOT_SHIPPED = (
    ".venv/",
    ".ruff_cache/",
    ".hypothesis/",
    ".pytest_cache/",
    ".ansible/",
    ".ci/",
    "tools/",
    "scripts/",
    "benchmarks/",
    "molecule/",
    "tests/integration/",
    "tests/conformance/",
    "tests/charts/",
    "tests/packaging/",
    "collections/",
    "ee/",
)


def galaxy() -> dict:
    return yaml.safe_load((ROOT / "galaxy.yml").read_text())


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("artifact")
    subprocess.run(
        [BIN / "ansible-galaxy", "collection", "build", "--output-path", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        cwd=out,
    )
    (tarball,) = out.glob("gpucloud-platform-*.tar.gz")
    return tarball


@pytest.fixture(scope="module")
def installed(artifact, tmp_path_factory) -> dict:
    """The artifact installed into an empty path; the environment that uses only it."""
    where = tmp_path_factory.mktemp("installed")
    cfg = where / "ansible.cfg"
    cfg.write_text("[defaults]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHONPATH"))}
    env |= {
        "ANSIBLE_CONFIG": str(cfg),
        "ANSIBLE_COLLECTIONS_PATH": str(where / "collections"),
        "ANSIBLE_NOCOLOR": "1",
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    }
    # kubernetes.core comes with the ansible package (not from Galaxy, out of reach here).
    subprocess.run(
        [
            BIN / "ansible-galaxy",
            "collection",
            "install",
            "--no-deps",
            "-p",
            "collections",
            artifact,
        ],
        check=True,
        capture_output=True,
        cwd=where,
        env=env,
    )
    return {
        "cwd": where,
        "env": env,
        "path": where / "collections" / "ansible_collections" / "gpucloud" / "platform",
    }


def use(installed: dict, *argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        cwd=installed["cwd"],
        env=installed["env"],
        timeout=300,
        check=False,
        **kw,
    )


def test_the_artifact_ships_the_collection_and_nothing_of_the_checkout(artifact):
    with tarfile.open(artifact) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("MANIFEST.json").read())
    stray = [
        n for n in names if n.startswith(NOT_SHIPPED) or "/__pycache__" in n or n.endswith(".pyc")
    ]
    assert stray == []
    for module in MODULES:
        assert f"plugins/modules/{module}.py" in names
    for role in ROLES:
        assert f"roles/{role}/meta/argument_specs.yml" in names
    info = manifest["collection_info"]
    assert (info["version"], info["dependencies"]) == (
        galaxy()["version"],
        galaxy()["dependencies"],
    )


def test_ansible_doc_renders_every_module_filter_and_role_from_the_installed_copy(installed):
    for kind, names in (("module", MODULES), ("filter", FILTERS), ("role", ROLES)):
        out = use(
            installed,
            "ansible-doc",
            "-t",
            kind,
            "--json",
            *[f"gpucloud.platform.{n}" for n in names],
        )
        assert out.returncode == 0, out.stderr
        docs = json.loads(out.stdout)
        assert sorted(docs) == [f"gpucloud.platform.{n}" for n in names], out.stderr
        for name, doc in docs.items():
            assert doc.get("doc") or doc.get("entry_points"), name
            where = doc.get("doc", {}).get("filename") or doc.get("path") or ""
            assert not where or where.startswith(str(installed["path"])), (name, where)


def test_a_module_runs_from_the_installed_copy(installed):
    """queue_arbiter refuses its bad input before any request: no cluster is needed, the
    module and its nested module_utils come from the installed copy."""
    out = use(
        installed,
        "ansible",
        "localhost",
        "-vvv",
        "-m",
        "gpucloud.platform.queue_arbiter",
        "-a",
        '{"settle_seconds": -1}',
    )
    assert out.returncode != 0
    assert f"Using module file {installed['path']}/plugins/modules/queue_arbiter.py" in out.stdout
    assert "settle_seconds: -1 is too small; 0 or more is accepted" in out.stdout


def test_a_filter_runs_from_the_installed_copy(installed):
    expr = "msg={{ 'actions: \"enqueue, allocate\"' | gpucloud.platform.scheduler_conf_errors }}"
    out = use(installed, "ansible", "localhost", "-m", "ansible.builtin.debug", "-a", expr)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "localhost | SUCCESS" in out.stdout and "tiers" in out.stdout, out.stdout


def test_the_shipped_unit_tests_import_from_the_installed_copy(installed):
    env = installed["env"] | {"PYTHONPATH": str(installed["path"].parents[2])}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/unit",
        ],
        capture_output=True,
        text=True,
        cwd=installed["path"],
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:]
    collected = int(re.search(r"(\d+) tests collected", out.stdout).group(1))
    assert collected > 500, out.stdout[-500:]


def test_versions_and_requirements_agree():
    """ansible-core: meta/runtime.yml, every role, the README; Python: requirements.txt and
    the modules' documented requirements."""
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"] == ">=2.19.0"
    for role in ROLES:
        meta = yaml.safe_load((ROOT / "roles" / role / "meta" / "main.yml").read_text())
        assert meta["galaxy_info"]["min_ansible_version"] == "2.19", role
    assert "| ansible-core | 2.19 or later" in (ROOT / "README.md").read_text()
    wanted = [
        re.sub(r"\s+", "", line)
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    fragment = (ROOT / "plugins" / "doc_fragments" / "module.py").read_text()
    documented = yaml.safe_load(fragment.split('r"""', 1)[1].split('"""', 1)[0])["requirements"]
    assert [re.sub(r"\s+", "", r) for r in documented] == wanted
