# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docs are tests: every example of the pages in ``pages.yml``, in page order,
against the cluster ``scripts/setup`` documents (the local cluster after ``site.yml`` on
``inventories/local``, demo tenants included).

The session fixture brings the cluster to that state (``site.yml``, as setup runs it).
Each page is one test: its examples run in order (``examples.py`` says what an example
is and what its markers mean), and the test fails naming every example that failed, with
the end of its output. A page that leaves the cluster changed says how to put it back in
its own last example, so the next page starts from the same state. Examples marked
``skip`` are counted, with their reasons, and there may be at most ``MAX_SKIPS``.

Runs last in the integration stage: it needs the demo tenants that other suites must not
see.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpucloud.platform.tests.docs.examples import Example, examples_of
from ansible_collections.gpucloud.platform.tests.integration.localcluster_helpers import ROOT

pytestmark = pytest.mark.integration

PAGES = yaml.safe_load((Path(__file__).parent / "pages.yml").read_text(encoding="utf-8"))
RUN: list[str] = PAGES["run"]
# Pages whose examples bring up a federation of their own: the federation stage runs them
# (tests/federation/test_federation_docs.py), not this one.
FEDERATION: list[str] = PAGES["federation"]
PENDING: dict[str, str] = PAGES["pending"]
MAX_SKIPS = 12
EXAMPLE_TIMEOUT = 600
TAIL = 3000


def all_pages() -> list[str]:
    return ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def test_every_page_is_run_or_says_why_not():
    """A new page cannot slip past the docs test: it is run, or pending with a reason."""
    listed = set(RUN) | set(FEDERATION) | set(PENDING)
    assert sorted(set(all_pages()) - listed) == []
    assert sorted(listed - set(all_pages())) == []
    assert not set(RUN) & set(PENDING)
    assert not set(FEDERATION) & (set(RUN) | set(PENDING))
    assert all(reason.strip() for reason in PENDING.values())


def test_skipped_examples_are_few_and_say_why():
    skipped = [e for e in examples_of(ROOT, [*RUN, *FEDERATION]) if e.skip is not None]
    assert all(e.skip for e in skipped), [e.where for e in skipped if not e.skip]
    assert len(skipped) <= MAX_SKIPS, [f"{e.where}: {e.skip}" for e in skipped]


@pytest.fixture(scope="session")
def docs_env(kubeconfig: str) -> dict[str, str]:
    """The environment a reader has after README's "Using it" (each example runs in a
    shell of its own, so what that block exports is given here): the venv first on PATH
    (``source .venv/bin/activate``), the local cluster's kubeconfig for the modules and
    kubectl, the repository's ansible.cfg."""
    env = dict(os.environ)
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        PATH=f"{venv_bin}:{env.get('PATH', '')}",
        K8S_AUTH_KUBECONFIG=kubeconfig,
        KUBECONFIG=kubeconfig,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
    )
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    return env


@pytest.fixture(scope="session")
def documented_cluster(docs_env: dict[str, str]) -> None:
    """The state every page starts from: site.yml on inventories/local, as scripts/setup
    runs it (idempotent on a cluster that already has it)."""
    proc = subprocess.run(
        ["ansible-playbook", "-i", "inventories/local", "site.yml"],
        cwd=ROOT,
        env=docs_env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"site.yml on inventories/local failed:\n{proc.stdout[-TAIL:]}{proc.stderr}")


def _command(example: Example, scratch: Path) -> list[str]:
    if example.kind == "script":
        return ["bash", "-e", "-o", "pipefail", "-c", example.text]
    playbook = scratch / f"example-{example.line}.yml"
    if example.kind == "tasks":
        play = [{"hosts": "localhost", "connection": "local", "gather_facts": False}]
        play[0]["tasks"] = yaml.safe_load(example.text)
        playbook.write_text(yaml.safe_dump(play, sort_keys=False), encoding="utf-8")
    else:
        playbook.write_text(example.text, encoding="utf-8")
    # The inventory is ansible.cfg's (inventories/local), as for a reader of the page.
    return ["ansible-playbook", str(playbook)]


def run_example(example: Example, env: dict[str, str], scratch: Path) -> str | None:
    """Run one example; None when it did what the page says, else why not."""
    if example.kind == "file":
        target = Path(example.path or "")
        target = target if target.is_absolute() else ROOT / target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(example.text, encoding="utf-8")
        return None
    proc = subprocess.run(
        _command(example, scratch),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=EXAMPLE_TIMEOUT,
        check=False,
    )
    output = proc.stdout + proc.stderr
    if example.fails is not None:
        if proc.returncode == 0:
            return "the page shows a refusal, but it ran without one"
        if example.fails not in output:
            return f"refused, but without {example.fails!r}:\n{output[-TAIL:]}"
        return None
    if proc.returncode != 0:
        return f"exit {proc.returncode}:\n{output[-TAIL:]}"
    missing = [text for text in example.expect if text not in output]
    if missing:
        return f"its output lacks {missing}:\n{output[-TAIL:]}"
    return None


@pytest.mark.parametrize("page", RUN)
def test_page_examples_run_as_written(page: str, documented_cluster, docs_env):
    examples = [e for e in examples_of(ROOT, [page]) if e.skip is None]
    failures = []
    with tempfile.TemporaryDirectory(prefix="docs-test-") as scratch:
        for example in examples:
            why = run_example(example, docs_env, Path(scratch))
            if why is not None:
                failures.append(f"{example.where} ({example.kind}): {why}")
    assert not failures, "\n\n".join(failures)
