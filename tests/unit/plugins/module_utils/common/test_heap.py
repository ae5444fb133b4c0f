# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""common.heap.long_lived: the collector is off inside, back on after however the block
ends, and what was built is frozen only when the caller keeps it so."""

from __future__ import annotations

import gc

import pytest

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    FieldError,
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.heap import long_lived
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import choose_victims


@pytest.fixture(autouse=True)
def _nothing_frozen():
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_collector_is_back_on_after_a_bulk_read_however_it_ends():
    assert gc.isenabled()
    with pytest.raises(PlatformValidationError), long_lived():
        assert not gc.isenabled()
        choose_victims([], -1)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with long_lived():
        pass
    assert not gc.isenabled()
    with long_lived(keep=True):
        built = [{"n": i} for i in range(100)]
    assert not gc.isenabled() and gc.get_freeze_count() == 0 and len(built) == 100


def test_kept_objects_stay_frozen_and_the_collector_is_back_on():
    with long_lived(keep=True):
        built = [{"n": i} for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_without_keep_nothing_stays_frozen():
    with long_lived():
        built = [{"n": i} for i in range(1000)]
    assert gc.get_freeze_count() == 0 and len(built) == 1000


def _frozen(obj: object) -> bool:
    """Frozen objects sit in the permanent generation, which ``gc.get_objects`` skips."""
    return gc.is_tracked(obj) and not any(o is obj for o in gc.get_objects())


def test_objects_frozen_by_someone_else_stay_frozen():
    theirs = [{"theirs": True}]
    gc.freeze()
    assert _frozen(theirs)
    with long_lived():
        built = [FieldError("f", f"m{i}") for i in range(10)]
    # Asked of the object itself: the freeze count also drops whenever a frozen
    # object is freed, which other work of the process does at any time.
    assert _frozen(theirs) and len(built) == 10


def test_overlapping_blocks_as_threads_run_them_leave_the_collector_on():
    first, second = long_lived(keep=True), long_lived(keep=True)
    first.__enter__()
    second.__enter__()  # another thread's LIST, while the first is decoding
    first.__exit__(None, None, None)
    assert gc.isenabled()  # the first block's end turns it back on
    second.__exit__(None, None, None)
    assert gc.isenabled()
