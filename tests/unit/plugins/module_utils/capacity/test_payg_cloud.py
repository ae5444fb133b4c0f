# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""capacity.cloud: a pay-as-you-go growth takes the IDC's unsold GPUs first, then the
cloud up to the tenant's burst quota (rules payg-idc-first, payg-burst-headroom,
payg-cloud-part)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.cloud import (
    CloudRoom,
    burst_headroom,
    cloud_part_after,
    cloud_room,
    cloud_short_error,
    idc_available,
    payg_split,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.spot.victims import (
    unsold_reclaim_need,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    commitments_from_queues,
    committed_total,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import (
    hybrid_queues as node_groups,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.spot_fixtures import queue

GPU = "nvidia.com/gpu"
GPUS = st.integers(min_value=0, max_value=200)


def room(**given) -> CloudRoom:
    values = dict(
        quota=16,
        leaf_in_use=0,
        payg_cloud=0,
        cloud=16,
        cloud_in_use=0,
        cloud_sold=0,
        reaches_cloud=True,
    )
    return CloudRoom(**{**values, **given})


@given(growth=GPUS, available=GPUS, headroom=GPUS)
def test_the_split_takes_the_idc_first_and_never_more_cloud_than_it_must(
    growth, available, headroom
):
    idc, cloud = payg_split(growth, available, headroom)
    assert idc + cloud == growth and idc >= 0 and cloud >= 0
    if headroom > 0:
        assert idc <= available
        assert idc == min(growth, available)  # the cloud only for what the IDC lacks
    else:
        assert cloud == 0  # no hybrid room: the IDC's, judged as before


@given(
    growth=GPUS,
    pool=GPUS,
    sold=GPUS,
    spot=GPUS,
    allocated=GPUS,
    reclaim=st.booleans(),
    quota=GPUS,
    leaf=GPUS,
    cloud=GPUS,
)
def test_a_split_that_passes_sells_no_gpu_twice(
    growth, pool, sold, spot, allocated, reclaim, quota, leaf, cloud
):
    """The invariant: idc part + cloud part == growth; the cloud part is at most the burst
    headroom; the IDC part at most the unsold GPUs, and without reclaim one for which
    rule unsold-reclaim-need asks no spot GPU more than for none."""
    r = room(quota=quota, leaf_in_use=leaf, cloud=cloud, cloud_in_use=leaf)
    headroom = burst_headroom(r)
    available = idc_available(pool, sold, spot, allocated, reclaim)
    idc, from_cloud = payg_split(growth, available, headroom)
    assert idc + from_cloud == growth
    if headroom == 0 or from_cloud > headroom:
        return  # judged as before, or refused by cloud_short_error
    assert from_cloud <= headroom <= quota - leaf
    assert idc <= max(0, pool - sold)
    if not reclaim:  # the IDC part frees no spot GPU more than nothing would
        need = unsold_reclaim_need(pool, sold, spot, allocated, 0)
        assert unsold_reclaim_need(pool, sold, spot, allocated, idc) == need


@given(pool=GPUS, sold=GPUS, spot=GPUS, allocated=GPUS)
def test_without_reclaim_the_idc_gives_the_most_that_frees_no_spot_gpu(pool, sold, spot, allocated):
    k = idc_available(pool, sold, spot, allocated, reclaim=False)
    assert 0 <= k <= max(0, pool - sold)
    if k and unsold_reclaim_need(pool, sold, spot, allocated, 0) == 0:
        assert unsold_reclaim_need(pool, sold, spot, allocated, k) == 0
    if k < max(0, pool - sold):
        assert unsold_reclaim_need(pool, sold, spot, allocated, k + 1) > 0


def test_with_reclaim_the_idc_gives_all_its_unsold_gpus():
    assert idc_available(64, 56, 8, 64, reclaim=True) == 8
    assert idc_available(64, 56, 8, 64, reclaim=False) == 0
    assert idc_available(64, 56, 2, 58, reclaim=False) == 6
    assert idc_available(64, 70, 0, 0, reclaim=True) == 0


def test_headroom_is_the_smaller_of_the_tenant_and_the_cloud():
    assert burst_headroom(room()) == 16
    # its burst queue's use and its PAYG cloud GPUs count against its quota
    assert burst_headroom(room(leaf_in_use=4, cloud_in_use=4, payg_cloud=2)) == 10
    # other tenants' burst use and PAYG cloud GPUs count against the cloud
    assert burst_headroom(room(cloud_in_use=8, cloud_sold=6)) == 2
    assert burst_headroom(room(cloud_sold=20)) == 0
    assert burst_headroom(room(reaches_cloud=False)) == 0
    assert burst_headroom(None) == 0


@given(live=GPUS, cloud_live=GPUS, target=GPUS, from_cloud=GPUS)
def test_a_grant_is_idc_below_and_cloud_on_top(live, cloud_live, target, from_cloud):
    cloud_live = min(cloud_live, live)
    after = cloud_part_after(live, cloud_live, target, from_cloud if target >= live else 0)
    if target < live:
        # a shrink gives cloud GPUs back first and never grows the IDC part
        assert 0 <= after <= cloud_live and target - after <= live - cloud_live
        assert after == 0 or target - after == live - cloud_live
    else:
        assert after == cloud_live + from_cloud


def hybrid_queues(payg_cloud: str | None = None, affinity: bool = True) -> list[dict]:
    *burst, payg_affinity = node_groups()
    payg = queue("alpha", "payg", deserved={GPU: 10}, capability={GPU: 10})
    if payg_cloud is not None:
        payg["metadata"]["annotations"] = {"platform.io/payg-cloud-gpus": payg_cloud}
    if affinity:
        payg["spec"].update(payg_affinity["spec"])
    return [payg, *burst]


def test_cloud_room_reads_the_quota_the_leaves_and_the_pay_as_you_go_cloud_gpus():
    payg, *burst = hybrid_queues("3")
    commitments = commitments_from_queues([payg])
    in_use = {"tenant-alpha-burst": {GPU: Decimal(2)}, "tenant-beta-burst": {GPU: Decimal(5)}}
    got = cloud_room("alpha", payg, burst, in_use, commitments)
    assert got == CloudRoom(8, 2, 3, 16, 7, 3, True)
    assert burst_headroom(got) == 3  # 8 - 2 - 3, the cloud has 16 - 7 - 3 = 6
    assert cloud_room("gamma", payg, burst, in_use, commitments) is None  # no leaf
    assert cloud_room("alpha", payg, burst[1:], in_use, commitments) is None  # no cloud-burst
    plain, *burst = hybrid_queues(affinity=False)
    assert not cloud_room("alpha", plain, burst, {}, commitments).reaches_cloud


def test_the_cloud_gpus_of_a_grant_are_not_committed_out_of_the_idc():
    payg, *_rest = hybrid_queues("4")
    commitments = commitments_from_queues([payg])
    assert commitments["alpha"].payg[GPU] == 6 and commitments["alpha"].payg_cloud == 4
    assert commitments["alpha"].payg_granted[GPU] == 10
    assert committed_total(commitments.values())[GPU] == 6
    # a record above the grant counts the whole grant as cloud, no more
    payg, *_rest = hybrid_queues("40")
    assert commitments_from_queues([payg])["alpha"].payg[GPU] == 0


@pytest.mark.parametrize("raw", ["-1", "1.5", "many"])
def test_a_malformed_record_is_refused_with_its_path(raw):
    payg, *_rest = hybrid_queues(raw)
    with pytest.raises(PlatformValidationError, match="payg-cloud-gpus"):
        commitments_from_queues([payg])


def test_the_refusal_names_both_headrooms():
    error = cloud_short_error("alpha", 30, 8, 22, room(leaf_in_use=4, cloud_in_use=6), True)
    assert str(error) == (
        "capability.nvidia.com/gpu: growing tenant 'alpha''s pay-as-you-go queue by 30 GPUs takes "
        "8 from the IDC (unsold) and 22 from the cloud, but the cloud has room for 10: burst quota "
        "16 - 4 its burst queue uses - 0 cloud GPUs its pay-as-you-go grant holds = 12; cloud 16 - "
        "6 used by burst queues - 0 granted to pay-as-you-go = 10; grow by at most 18 "
        "(rule payg-idc-first)"
    )
