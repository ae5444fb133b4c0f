# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The helm_rollout filters refuse bad input naming the field and the value."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpucloud.platform.plugins.filter.helm_rollout import FilterModule

F = FilterModule().filters()


def test_the_filters_chain_from_manifest_to_what_waits():
    docs = [{"kind": "Deployment", "metadata": {"name": "web"}}]
    workloads = F["helm_release_workloads"](docs, "ns")
    assert F["helm_rollout_waiting"]([], workloads) == ["Deployment/ns/web - not created yet"]
    assert F["go_duration_to_seconds"]("2m") == 120


@pytest.mark.parametrize(
    ("name", "args", "said"),
    [
        ("helm_release_workloads", ("manifest text", "ns"), "must be the manifest's documents"),
        ("helm_release_workloads", ([], ""), "namespace: ''"),
        ("helm_release_workloads", (["x"], "ns"), "manifest[0]"),
        ("helm_rollout_waiting", ({}, []), "live: {}"),
        (
            "helm_rollout_waiting",
            ([], [{"kind": "Deployment"}]),
            "must have kind, name and namespace",
        ),
        ("go_duration_to_seconds", ("ten minutes",), "'ten minutes' is not a Go duration"),
    ],
)
def test_bad_input_is_refused_with_the_field_and_the_value(name, args, said):
    with pytest.raises(AnsibleFilterError) as exc:
        F[name](*args)
    assert said in str(exc.value) and name in str(exc.value)
