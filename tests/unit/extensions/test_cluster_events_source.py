# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event source plugin gpucloud.platform.cluster_events: the service's events reach
ansible-rulebook's queue in order and none is dropped, a failing service fails the source,
a cancelled source stops the service, bad arguments are refused before it starts, its
documentation is its arguments, and it finds the collection when ansible-rulebook runs it
by its path."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import ansible_collections.gpucloud.platform as collection
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    GPU_UNHEALTHY_CONDITIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.event import (
    PLATFORM_EVENTS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.inputs import (
    DEFAULT_RESYNC_SECONDS,
    SOURCE_OPTIONS,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import KINDS

PLUGIN = Path("extensions", "eda", "plugins", "event_source", "cluster_events.py")
HERE = Path(__file__).resolve().parents[3] / PLUGIN


@pytest.fixture(scope="module")
def plugin():
    spec = importlib.util.spec_from_file_location("cluster_events_plugin", HERE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def collect(queue: asyncio.Queue, count: int, timeout: float = 10) -> Any:
    async def take():
        return [await asyncio.wait_for(queue.get(), timeout) for _index in range(count)]

    return take()


def test_events_reach_a_one_slot_queue_in_order_and_a_cancel_stops_the_service(plugin):
    stopped = threading.Event()
    threads: list[str] = []

    def runner(args, emit, stop):
        threads.append(threading.current_thread().name)
        for i in range(200):
            emit({"platform_event": "pool_changed", "i": i})
        stop.wait(30)
        stopped.set()

    async def scenario():
        queue: asyncio.Queue = asyncio.Queue(1)  # ansible-rulebook's source queue holds one
        task = asyncio.create_task(plugin.forward(queue, {}, runner))
        got = []
        for _index in range(200):
            got.append(await asyncio.wait_for(queue.get(), 10))
            await asyncio.sleep(0)  # a slow rule engine
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return got

    got = asyncio.run(scenario())
    assert [e["i"] for e in got] == list(range(200))
    assert stopped.wait(5), "the service was not asked to stop"
    assert threads != [threading.main_thread().name]


def test_a_failing_service_fails_the_source_after_its_events(plugin):
    def runner(args, emit, stop):
        emit({"platform_event": "pool_changed", "name": "n1"})
        emit({"platform_event": "pool_changed", "name": "n2"})
        raise RuntimeError("Could not create API client: no kubeconfig")

    async def scenario():
        queue: asyncio.Queue = asyncio.Queue()
        with pytest.raises(RuntimeError, match="Could not create API client"):
            await plugin.forward(queue, {}, runner)
        return [queue.get_nowait()["name"] for _index in range(queue.qsize())]

    assert asyncio.run(scenario()) == ["n1", "n2"]


def test_a_service_that_returns_ends_the_source(plugin):
    def runner(args, emit, stop):
        emit({"platform_event": "large_job_gone"})

    async def scenario():
        queue: asyncio.Queue = asyncio.Queue()
        await asyncio.wait_for(plugin.forward(queue, {"kinds": ["Node"]}, runner), 10)
        return queue.get_nowait()

    assert asyncio.run(scenario()) == {"platform_event": "large_job_gone"}


def test_main_hands_its_args_to_the_service(plugin, monkeypatch):
    seen = []

    def runner(args, emit, stop):
        seen.append(args)
        emit({"platform_event": "subscription_changed"})

    monkeypatch.setattr(plugin, "run_service", runner)
    args = {"resync_seconds": 5, "kinds": ["Queue", "PodGroup"], "kubeconfig": "/k"}

    async def scenario():
        queue: asyncio.Queue = asyncio.Queue(1)
        await asyncio.wait_for(plugin.main(queue, args), 10)
        return queue.get_nowait()

    assert asyncio.run(scenario()) == {"platform_event": "subscription_changed"}
    assert seen == [args]


def test_main_refuses_bad_arguments_before_anything_starts(plugin, monkeypatch):
    started = []
    monkeypatch.setattr(plugin, "run_service", lambda *a: started.append(a))
    with pytest.raises(PlatformValidationError, match="resync: is not an argument"):
        asyncio.run(plugin.main(asyncio.Queue(), {"resync": 30}))
    assert started == []


def test_the_documentation_is_the_sources_arguments(plugin):
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert tuple(doc["options"]) == SOURCE_OPTIONS
    assert doc["options"]["resync_seconds"]["default"] == DEFAULT_RESYNC_SECONDS
    assert tuple(doc["options"]["kinds"]["default"]) == KINDS
    assert set(doc["options"]["kinds"]["choices"]) == set(KINDS)
    example = yaml.safe_load(plugin.EXAMPLES)
    (source,) = example[0]["sources"]
    assert set(source["gpucloud.platform.cluster_events"]) <= set(SOURCE_OPTIONS)
    assert tuple(doc["options"]["gpu_unhealthy_conditions"]["default"]) == (
        GPU_UNHEALTHY_CONDITIONS
    )
    for event in PLATFORM_EVENTS:
        assert f"C({event})" in plugin.DOCUMENTATION, event


def clean_env(**extra: str) -> dict[str, str]:
    """No way to any cluster: no K8S_AUTH_*, no in-cluster service, no PYTHONPATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("K8S_AUTH_", "KUBERNETES_", "ANSIBLE_"))
        and k not in ("PYTHONPATH", "KUBECONFIG")
    }
    env.update(extra)
    return env


def test_run_by_its_path_it_finds_the_collection_above_it(tmp_path):
    """ansible-rulebook runs a source with runpy from the installed collection, with no
    collection loader and the collection not on sys.path."""
    installed = Path(next(iter(collection.__path__))) / PLUGIN
    assert "ansible_collections" in installed.parts
    probe = (
        "import runpy, sys\n"
        "assert not any(m.startswith('ansible_collections.gpucloud') for m in sys.modules)\n"
        f"plugin = runpy.run_path({str(installed)!r})\n"
        "events = plugin['_events_package']()\n"
        "print(events.__name__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=clean_env(HOME=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "ansible_collections.gpucloud.platform.plugins.module_utils.events"


def test_run_alone_it_reports_a_cluster_it_cannot_reach_and_exits(tmp_path):
    """``python cluster_events.py``: the MockQueue harness runs main; with a kubeconfig that
    does not exist it fails at once, naming why, instead of waiting for a cluster."""
    installed = Path(next(iter(collection.__path__))) / PLUGIN
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(installed)],
        cwd=tmp_path,
        env=clean_env(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "missing")),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode != 0
    assert "Could not create API client" in run.stderr, run.stderr[-2000:]
    assert time.monotonic() - started < 60
