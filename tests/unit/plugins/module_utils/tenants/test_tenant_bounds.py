# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule tenant-bounds: pods, claims and storage per tenant namespace."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.bounds import (
    POD_FLOOR,
    PODS_PER_GPU,
    bounds_from,
    limit_range,
    read_bounds,
    resource_quota,
)

GPU = "nvidia.com/gpu"


def test_defaults_follow_the_purchase():
    errors: list = []
    bounds = bounds_from(None, {GPU: Decimal(40)}, {GPU: Decimal(8)}, errors)
    assert errors == []
    assert bounds.pods == 48 * PODS_PER_GPU
    assert (bounds.claims, bounds.storage, bounds.claim_size) == (50, "20Ti", "4Ti")
    assert bounds_from(None, {GPU: Decimal(1)}, None, errors).pods == POD_FLOOR


def test_given_bounds_win_and_land_on_the_objects():
    errors: list = []
    bounds = bounds_from(
        {"pods": 3, "claims": 2, "storage": "100Gi", "claim_size": "10Gi"},
        {GPU: Decimal(8)},
        None,
        errors,
    )
    assert errors == []
    quota = resource_quota("a", bounds)
    assert quota["metadata"] == {
        "name": "platform-bounds",
        "namespace": "tenant-a",
        "labels": {"platform.io/tenant": "a", "platform.io/managed-by": "gpucloud-platform"},
    }
    assert quota["spec"]["hard"] == {
        "pods": "3",
        "persistentvolumeclaims": "2",
        "requests.storage": "100Gi",
    }
    assert limit_range("a", bounds)["spec"]["limits"] == [
        {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}
    ]


def test_bad_bounds_are_each_named():
    errors: list = []
    bounds_from(
        {"pods": 0, "claims": True, "storage": "lots", "claim_size": "1Ei", "extra": 1},
        {GPU: Decimal(1)},
        None,
        errors,
    )
    messages = [str(e) for e in errors]
    assert any(m.startswith("bounds: unknown key(s) extra") for m in messages), messages
    assert any(m.startswith("bounds.pods: 0 must be a whole number") for m in messages)
    assert any(m.startswith("bounds.claims: True must be") for m in messages)
    assert any(m.startswith("bounds.storage: 'lots' must be a storage size") for m in messages)
    # 1Ei is a size, but more than the default 20Ti in all.
    assert any(m.startswith("bounds.claim_size: 1Ei is more than") for m in messages)


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_the_pod_bound_never_falls_below_a_node_and_grows_with_gpus(a, b):
    low, high = sorted((a, b))
    bound_low = bounds_from(None, {GPU: Decimal(low)}, None, []).pods
    bound_high = bounds_from(None, {GPU: Decimal(high)}, None, []).pods
    assert POD_FLOOR <= bound_low <= bound_high


def test_read_bounds_gives_back_only_what_differs_from_the_purchase():
    purchase = {GPU: Decimal(8)}
    default = bounds_from(None, purchase, None, [])
    assert (
        read_bounds(resource_quota("a", default), limit_range("a", default), purchase, None) == {}
    )
    errors: list = []
    set_ = bounds_from({"pods": 3, "claim_size": "500Gi"}, purchase, None, errors)
    assert errors == []
    got = read_bounds(resource_quota("a", set_), limit_range("a", set_), purchase, None)
    assert got == {"pods": 3, "claim_size": "500Gi"}
    # Applied again, what was read gives the same objects.
    again = bounds_from(got, purchase, None, errors)
    assert resource_quota("a", again) == resource_quota("a", set_)
    assert limit_range("a", again) == limit_range("a", set_)
    assert read_bounds(None, None, purchase, None) == {}


def test_a_storage_class_bound_lands_on_the_quota_and_reads_back():
    """Rule storage-class-bounds: the API server's own per-class key; read back as given."""
    errors: list = []
    given_bounds = {"storage": "10Ti", "storage_classes": {"checkpoints": "2Ti", "models": "500Gi"}}
    bounds = bounds_from(given_bounds, {GPU: Decimal(8)}, None, errors)
    assert errors == []
    hard = resource_quota("alpha", bounds)["spec"]["hard"]
    assert hard["checkpoints.storageclass.storage.k8s.io/requests.storage"] == "2Ti"
    assert hard["models.storageclass.storage.k8s.io/requests.storage"] == "500Gi"
    assert hard["requests.storage"] == "10Ti"
    quota = resource_quota("alpha", bounds)
    assert read_bounds(quota, None, {GPU: Decimal(8)}, None) == {
        "storage": "10Ti",
        "storage_classes": {"checkpoints": "2Ti", "models": "500Gi"},
    }
    # without class bounds, no class key, and nothing read back
    plain = bounds_from(None, {GPU: Decimal(8)}, None, errors)
    assert not any(".storageclass." in k for k in resource_quota("alpha", plain)["spec"]["hard"])


def test_bad_storage_class_bounds_are_each_named():
    errors: list = []
    bounds_from(
        {"storage": "1Ti", "storage_classes": {"Bad_Class": "1Gi", "models": "2Ti", "x": "lots"}},
        {GPU: Decimal(8)},
        None,
        errors,
    )
    said = [str(e) for e in errors]
    assert any(s.startswith("bounds.storage_classes.Bad_Class:") for s in said), said
    assert (
        "bounds.storage_classes.models: 2Ti is more than the tenant's storage in all (1Ti)" in said
    )
    assert any(
        s.startswith("bounds.storage_classes.x: 'lots' must be a storage size") for s in said
    )
    errors = []
    bounds_from({"storage_classes": ["models"]}, {GPU: Decimal(8)}, None, errors)
    assert "must be a mapping of storage class to size" in str(errors[0])
