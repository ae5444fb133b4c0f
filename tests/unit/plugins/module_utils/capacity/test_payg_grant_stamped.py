# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule payg-grant-stamped: a write that grows a pay-as-you-go queue's GPUs is a grant,
whoever writes it."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.grace import (
    grant_grows,
    granted_at,
    stamp,
)

GPU = "nvidia.com/gpu"


def queue(gpus):
    capability = {} if gpus is None else {GPU: gpus, "cpu": "0"}
    return {"metadata": {"name": "tenant-a-payg"}, "spec": {"capability": capability}}


def test_more_gpus_than_live_is_a_grant():
    assert grant_grows(queue(3), queue(2))
    assert grant_grows(queue("3"), queue(0))


def test_the_same_or_fewer_gpus_is_not():
    assert not grant_grows(queue(2), queue(2))
    assert not grant_grows(queue(1), queue(2))


def test_a_new_queue_is_a_grant_only_with_gpus():
    assert grant_grows(queue(1), None)
    assert not grant_grows(queue(0), None)


def test_a_write_without_gpus_is_not_a_grant():
    assert not grant_grows(queue(None), queue(2))


def test_the_stamp_reads_back_as_the_time_it_was_made():
    stamped = stamp(queue(3), 1_800_000_000.0)
    assert granted_at(stamped) == 1_800_000_000.0
