# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule event-source-args: the event source's arguments."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.inputs import (
    CONNECTION_OPTIONS,
    SourceArgs,
    source_args,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.events.model import KINDS
from ansible_collections.gpucloud.platform.plugins.module_utils.gpu_health.signals import (
    DEFAULT_UNHEALTHY_CONDITIONS,
)


def test_no_arguments_is_every_kind_every_30_seconds_and_the_environment_connection():
    assert source_args({}) == SourceArgs({}, 30.0, KINDS)
    assert source_args(None) == SourceArgs({}, 30.0, KINDS)


def test_the_connection_options_pass_through_and_unset_ones_are_left_out():
    args = {name: f"v-{name}" for name in CONNECTION_OPTIONS if name != "validate_certs"}
    args.update(
        validate_certs="false", context=None, resync_seconds="5", kinds=["PodGroup", "Queue"]
    )
    read = source_args(args)
    assert read.connection == {
        **{k: v for k, v in args.items() if k in CONNECTION_OPTIONS and v is not None},
        "validate_certs": False,
    }
    assert "context" not in read.connection
    assert read.resync_seconds == 5.0
    assert read.kinds == ("Queue", "PodGroup")  # listed in KINDS order: queues first


def test_a_kubeconfig_may_be_its_content():
    content = {"apiVersion": "v1", "clusters": []}
    assert source_args({"kubeconfig": content}).connection == {"kubeconfig": content}


def test_ansible_rulebooks_own_arguments_are_left_alone():
    assert source_args({"eda_feedback_queue": object()}) == SourceArgs()


@pytest.mark.parametrize(
    "args, field",
    [
        ({"resync": 30}, "resync"),
        ({"namespace": "tenant-a"}, "namespace"),
        ({"resync_seconds": 0}, "resync_seconds"),
        ({"resync_seconds": -1}, "resync_seconds"),
        ({"resync_seconds": "soon"}, "resync_seconds"),
        ({"resync_seconds": True}, "resync_seconds"),
        ({"resync_seconds": float("inf")}, "resync_seconds"),
        ({"resync_seconds": "nan"}, "resync_seconds"),
        ({"kinds": "Node"}, "kinds"),
        ({"kinds": []}, "kinds"),
        ({"kinds": ["Node", "Pod"]}, "kinds"),
        ({"kinds": ["Node", "Node"]}, "kinds"),
        ({"validate_certs": "maybe"}, "validate_certs"),
        ({"host": ""}, "host"),
        ({"api_key": 12}, "api_key"),
        ({"gpu_unhealthy_conditions": "GpuUnhealthy"}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_conditions": []}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_conditions": ["GpuUnhealthy", ""]}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_conditions": ["Gpu Unhealthy"]}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_conditions": [7]}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_conditions": ["Ready"]}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_conditions": ["GpuX", "GpuX"]}, "gpu_unhealthy_conditions"),
        ({"gpu_unhealthy_condition": ["GpuUnhealthy"]}, "gpu_unhealthy_condition"),
    ],
)
def test_a_bad_argument_is_refused_by_name(args, field):
    with pytest.raises(PlatformValidationError) as caught:
        source_args(args)
    assert [e.field for e in caught.value.errors] == [field]


def test_every_bad_argument_is_named_at_once():
    with pytest.raises(PlatformValidationError) as caught:
        source_args({"resync": 1, "resync_seconds": 0, "kinds": ["Pod"]})
    assert sorted(e.field for e in caught.value.errors) == ["kinds", "resync", "resync_seconds"]


def test_the_gpu_fault_condition_types_default_to_gpu_healths():
    assert source_args({}).gpu_unhealthy_conditions == DEFAULT_UNHEALTHY_CONDITIONS
    read = source_args({"gpu_unhealthy_conditions": ["GpuUnhealthy", "example.com/GpuXid"]})
    assert read.gpu_unhealthy_conditions == ("GpuUnhealthy", "example.com/GpuXid")


@pytest.mark.parametrize(
    "value, words",
    [
        (
            ["Ready"],
            "gpu_unhealthy_conditions: Ready is every healthy node's condition, not a GPU fault",
        ),
        (
            "GpuUnhealthy",
            "gpu_unhealthy_conditions: 'GpuUnhealthy' must be a list of Node condition types",
        ),
        (["A", "A"], "gpu_unhealthy_conditions: ['A', 'A'] names a condition type twice"),
    ],
)
def test_a_bad_condition_type_list_is_refused_in_words(value, words):
    with pytest.raises(PlatformValidationError) as caught:
        source_args({"gpu_unhealthy_conditions": value})
    assert words in str(caught.value)
