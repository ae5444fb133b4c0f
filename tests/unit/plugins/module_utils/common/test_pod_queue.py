# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule pod-queue (common/names.pod_queue): which queue Volcano schedules a pod in."""

from __future__ import annotations

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.names import pod_queue

JOB_KEY = "volcano.sh/queue-name"
PLAIN_KEY = "scheduling.volcano.sh/queue-name"


@pytest.mark.parametrize(
    "meta,queue",
    [
        # A Volcano Job's pod: the job controller writes label and annotation.
        ({"labels": {JOB_KEY: "q-job"}, "annotations": {JOB_KEY: "q-job"}}, "q-job"),
        ({"annotations": {JOB_KEY: "q-job"}}, "q-job"),
        # A plain pod (a Deployment's, an InferenceService's): admission checked this one.
        ({"annotations": {PLAIN_KEY: "q-plain"}}, "q-plain"),
        # The job controller's word wins over an annotation written on the template.
        ({"labels": {JOB_KEY: "q-job"}, "annotations": {PLAIN_KEY: "q-plain"}}, "q-job"),
        ({}, ""),
        ({"labels": None, "annotations": None}, ""),
    ],
)
def test_the_queue_of_a_pod(meta, queue):
    assert pod_queue(meta) == queue
