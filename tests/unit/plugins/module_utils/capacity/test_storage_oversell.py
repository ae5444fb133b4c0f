# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule storage-class-oversell: storage sold per class never beyond the class."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity import (
    storage_oversell as so,
)

TI = Decimal(2**40)
KEY = "checkpoints.storageclass.storage.k8s.io/requests.storage"


def quota(tenant: str, **classes: str) -> dict:
    return {
        "metadata": {"labels": {"platform.io/tenant": tenant}},
        "spec": {
            "hard": {
                f"{c}.storageclass.storage.k8s.io/requests.storage": v for c, v in classes.items()
            }
        },
    }


def test_capacities_and_commitments_are_read_from_the_objects():
    assert so.class_capacity({"data": {"checkpoints": "10Ti", "bad": "lots"}}) == {
        "checkpoints": 10 * TI
    }
    assert so.class_capacity(None) == {}
    found = so.class_commitments(
        [quota("a", checkpoints="2Ti"), quota("b", models="1Ti"), {"metadata": {}}]
    )
    assert found == {"a": {"checkpoints": 2 * TI}, "b": {"models": 1 * TI}}


def test_only_a_growing_bound_of_a_class_with_a_capacity_is_judged():
    capacity = {"checkpoints": 10 * TI}
    sold = {"a": {"checkpoints": 9 * TI}, "b": {"checkpoints": 4 * TI}}  # already oversold
    assert so.storage_oversell_errors("a", capacity, sold, {"checkpoints": "9Ti"}) == []
    assert so.storage_oversell_errors("a", capacity, sold, {"checkpoints": "8Ti"}) == []
    assert (
        so.storage_oversell_errors("a", capacity, sold, {"models": "100Ti"}) == []
    )  # no capacity known
    (error,) = so.storage_oversell_errors("a", capacity, sold, {"checkpoints": "10Ti"})
    assert str(error) == (
        "bounds.storage_classes.checkpoints: 10Ti does not fit in storage class checkpoints: 10Ti in all - "
        "4Ti sold to other tenants = 6Ti left; ask for less, or raise the class's capacity in storage_classes"
    )
    assert so.storage_grows({"checkpoints": 2 * TI}, {"checkpoints": "2Ti"}) is False
    assert so.storage_grows({}, {"models": "1Gi"}) is True


@given(
    st.integers(1, 100),
    st.lists(st.integers(0, 100), min_size=0, max_size=5),
    st.integers(1, 100),
)
def test_what_is_admitted_never_sells_more_than_the_class(capacity_ti, others_ti, want_ti):
    capacity = {"checkpoints": capacity_ti * TI}
    sold = {f"t{i}": {"checkpoints": v * TI} for i, v in enumerate(others_ti)}
    errors = so.storage_oversell_errors("new", capacity, sold, {"checkpoints": f"{want_ti}Ti"})
    fits = sum(others_ti) + want_ti <= capacity_ti
    assert (errors == []) is fits


def test_a_catalog_is_judged_by_its_total_per_class_and_only_when_it_grows():
    """Rule catalog-storage-oversell."""
    capacity = {"checkpoints": 10 * TI}
    live = {"a": {"checkpoints": 4 * TI}, "b": {"checkpoints": 5 * TI}}
    assert so.catalog_storage_oversell_errors(capacity, live, {"a": {"checkpoints": "5Ti"}}) == []
    (error,) = so.catalog_storage_oversell_errors(capacity, live, {"a": {"checkpoints": "6Ti"}})
    assert error.field == "tenants.bounds.storage_classes.checkpoints"
    assert "1Ti too many; growing: a" in error.message
    assert (
        so.catalog_storage_oversell_errors(capacity, live, {"a": {"checkpoints": "6Ti"}}, ["b"])
        == []
    )
    oversold = {"a": {"checkpoints": 8 * TI}, "b": {"checkpoints": 5 * TI}}  # capacity lowered
    assert (
        so.catalog_storage_oversell_errors(capacity, oversold, {"a": {"checkpoints": "7Ti"}}) == []
    )


@given(
    sizes=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]), st.integers(min_value=0, max_value=20), max_size=4
    )
)
def test_a_catalog_passes_exactly_when_it_fits_or_does_not_grow(sizes):
    capacity = {"checkpoints": 10 * TI}
    live = {"a": {"checkpoints": 3 * TI}, "z": {"checkpoints": 2 * TI}}
    desired = {t: {"checkpoints": f"{n}Ti"} for t, n in sizes.items()}
    total = sum(sizes.values()) + (0 if "a" in sizes else 3) + 2
    errors = so.catalog_storage_oversell_errors(capacity, live, desired)
    assert (errors == []) == (total <= 10 or total <= 5)
