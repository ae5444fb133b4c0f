# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule payg-grant-stamped: a write that grows a pay-as-you-go queue's GPUs is a grant,
whoever writes it."""

from __future__ import annotations

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.grace import (
    grant_grows,
    granted_at,
    stamp,
    stamp_for_write,
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


def test_a_write_that_grows_is_stamped_now():
    written = stamp_for_write(queue(4), stamp(queue(2), 1_000.0), 5_000.0)
    assert granted_at(written) == 5_000.0


def test_a_write_that_does_not_grow_keeps_the_live_stamp():
    # A server-side apply of the capacity manager without the stamp would remove it, and
    # the next reconcile would shrink the grant before its grace ends.
    live = stamp(queue(4), 1_000.0)
    for gpus in (4, 2, None):
        assert granted_at(stamp_for_write(queue(gpus), live, 5_000.0)) == 1_000.0


def test_a_write_over_an_unstamped_grant_adds_no_stamp():
    assert granted_at(stamp_for_write(queue(2), queue(4), 5_000.0)) is None
    assert granted_at(stamp_for_write(queue(0), None, 5_000.0)) is None
