# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules sla-waiting-time and sla-wait-by-class: the admission deadline each class gives
its jobs, how it is read back, and where it is refused."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import (
    SLA_WAITING_ANNOTATION,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.classes import (
    DEFAULT_CLASSES,
    job_class_table,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.completion import (
    complete_manifest,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.manifest import build_job
from ansible_collections.gpucloud.platform.plugins.module_utils.jobs.sla import (
    duration_text,
    parse_duration,
    waiting_seconds,
)

BASE = {
    "tenant": "alpha",
    "queue": "tenant-alpha-algo",
    "kind": "single",
    "image": "i",
    "command": ["x"],
}
MANIFEST = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "mine"},
    "spec": {
        "queue": "tenant-alpha-algo",
        "tasks": [
            {
                "name": "t",
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "i",
                                "resources": {"limits": {"nvidia.com/gpu": 1}},
                            }
                        ]
                    }
                },
            }
        ],
    },
}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5s", 5), ("1m30s", 90), ("1h", 3600), ("250ms", 0.25), ("1.5s", 1.5), ("2m0s", 120)],
)
def test_go_durations_are_read(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "0s", "-5s", "5 s", "s", "5x", "1h-1m", None, 5])
def test_what_volcano_would_not_read_is_no_waiting_time(text):
    assert parse_duration(text) is None


@given(st.integers(min_value=1, max_value=10**6))
def test_the_platform_writes_what_it_reads_back(seconds):
    assert parse_duration(duration_text(seconds)) == seconds


def test_the_first_readable_key_wins_as_in_volcano():
    assert waiting_seconds({SLA_WAITING_ANNOTATION: "5s", "sla-waiting-time": "1m"}) == 5
    assert waiting_seconds({SLA_WAITING_ANNOTATION: "soon", "sla-waiting-time": "1m"}) == 60
    assert waiting_seconds({"other": "5s"}) is None and waiting_seconds(None) is None


def test_classes_that_take_gpus_carry_a_waiting_time_and_the_others_none():
    waits = {name: c.sla_waiting_seconds for name, c in DEFAULT_CLASSES.items()}
    assert waits == {"critical": 5, "large": 5, "normal": 10, "debug": None, "spot": None}
    for name, gpus, extra in (
        ("large", 8, {"kind": "pytorch_ddp", "replicas": 4}),
        ("normal", 1, {}),
        ("critical", 1, {}),
    ):
        m = build_job({**BASE, "name": "j", "gpus_per_pod": gpus, "job_class": name, **extra})
        want = duration_text(DEFAULT_CLASSES[name].sla_waiting_seconds)
        assert m["metadata"]["annotations"][SLA_WAITING_ANNOTATION] == want, name
    debug = build_job({**BASE, "name": "j", "gpus_per_pod": 1, "job_class": "debug"})
    assert "annotations" not in debug["metadata"]


def test_a_manifest_gets_its_class_waiting_time_and_keeps_its_own():
    out = complete_manifest(MANIFEST, "alpha", queue_type="team", job_class="normal")
    assert out["metadata"]["annotations"] == {SLA_WAITING_ANNOTATION: "10s"}
    mine = copy.deepcopy(MANIFEST)
    mine["metadata"]["annotations"] = {SLA_WAITING_ANNOTATION: "1m"}
    out = complete_manifest(mine, "alpha", queue_type="team", job_class="normal")
    assert out["metadata"]["annotations"] == {SLA_WAITING_ANNOTATION: "1m"}
    debug = complete_manifest(MANIFEST, "alpha", queue_type="team", job_class="debug")
    assert "annotations" not in debug["metadata"]


@pytest.mark.parametrize(
    ("job_class", "value", "words"),
    [("debug", "5s", "class debug is never admitted"), ("normal", "soon", "not a duration")],
)
def test_a_waiting_time_set_by_hand_is_refused_where_the_rule_says(job_class, value, words):
    mine = copy.deepcopy(MANIFEST)
    mine["metadata"]["annotations"] = {"sla-waiting-time": value}
    with pytest.raises(PlatformValidationError) as info:
        complete_manifest(mine, "alpha", queue_type="team", job_class=job_class)
    (error,) = info.value.errors
    assert error.field == "manifest.metadata.annotations.sla-waiting-time"
    assert words in error.message


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"debug": {"sla_waiting_seconds": 5}}, "debug-job never takes GPUs"),
        ({"normal": {"priority_class": "spot-job", "sla_waiting_seconds": 5}}, "spot-job never"),
        ({"normal": {"sla_waiting_seconds": 0}}, "from 1 to 86400"),
        ({"large": {"sla_waiting_seconds": "5s"}}, "whole number of seconds"),
    ],
)
def test_a_bad_table_waiting_time_names_the_setting(row, words):
    with pytest.raises(PlatformValidationError) as info:
        job_class_table(row)
    (name,) = row
    matching = [
        e for e in info.value.errors if e.field == f"job_classes.{name}.sla_waiting_seconds"
    ]
    assert len(matching) == 1 and words in matching[0].message, info.value.errors


def test_a_table_may_switch_a_waiting_time_off_or_change_it():
    table = job_class_table(
        {"normal": {"sla_waiting_seconds": None}, "large": {"sla_waiting_seconds": 60}}
    )
    assert table["normal"].sla_waiting_seconds is None and table["large"].sla_waiting_seconds == 60
    m = build_job({**BASE, "name": "j", "gpus_per_pod": 1}, table)
    assert "annotations" not in m["metadata"]
