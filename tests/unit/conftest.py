# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for the unit tests: one way to run a module against the fake cluster."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from ansible.module_utils import _internal as _ansible_internal
from ansible.module_utils.testing import patch_module_args
from hypothesis import settings

from ansible_collections.gpucloud.platform.plugins.module_utils.kube.cluster import Cluster

# No deadline per example: the properties are about what the core computes, and scripts/test
# runs this stage at the lowest priority beside the local cluster, where an example's time
# says how busy the machine is, not how fast the code is.
settings.register_profile("gpucloud", deadline=None)
settings.load_profile("gpucloud")


def core_deprecations(result: dict[str, Any]) -> list[Any]:
    """The deprecations a module result reports that are not the collection's own."""
    return [
        d
        for d in result.get("deprecations") or []
        if "gpucloud.platform" not in json.dumps(d.get("deprecator") or d.get("collection_name"))
    ]


@pytest.fixture
def run_module(monkeypatch, capsys) -> Callable[..., dict[str, Any]]:
    """``run_module(module, cluster, **args)``: run ``module.main()`` with ``args`` as its
    parameters, ``cluster`` (a ``FakeCluster``) as its connection, and diff mode on
    unless ``_ansible_diff=False``; returns what the module printed (exit or fail)."""

    def run(module: Any, cluster: Any, **args: Any) -> dict[str, Any]:
        monkeypatch.setattr(Cluster, "from_module", classmethod(lambda cls, m: cluster))
        # A module's warnings go into its result, as in a module process, even when an
        # earlier test imported Ansible's controller code (which reroutes them to its display).
        monkeypatch.setattr(_ansible_internal, "is_controller", False)
        args.setdefault("_ansible_diff", True)
        cluster.requests = 0
        with patch_module_args(args), pytest.raises(SystemExit):
            module.main()
        result = json.loads(capsys.readouterr().out)
        # No run of the collection's modules may set off ansible-core's deprecation
        # warnings (for example ``warnings`` passed to exit_json); only the collection's
        # own deprecations (an alias the caller used) may be reported.
        assert not core_deprecations(result), core_deprecations(result)
        return result

    return run
