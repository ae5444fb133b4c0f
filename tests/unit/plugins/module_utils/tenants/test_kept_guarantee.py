# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule guarantee-kept: a subscription guarantee left out keeps the live one."""

from __future__ import annotations

from decimal import Decimal

from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    TenantSpec,
    kept_guarantee,
)

LIVE = {
    "tenant-alpha-subscription": {
        "spec": {"guarantee": {"resource": {"nvidia.com/gpu": "2"}}},
    }
}


def spec(guarantee=None):
    return TenantSpec("alpha", {"nvidia.com/gpu": Decimal(24)}, guarantee or {})


def test_left_out_keeps_the_live_guarantee():
    kept = kept_guarantee(spec(), None, LIVE)
    assert kept.subscription_guarantee == {"nvidia.com/gpu": Decimal(2)}


def test_given_wins_and_empty_means_none():
    given = spec({"nvidia.com/gpu": Decimal(4)})
    assert kept_guarantee(given, {"nvidia.com/gpu": 4}, LIVE) is given
    assert kept_guarantee(spec(), {}, LIVE).subscription_guarantee == {}


def test_a_new_tenant_has_none_to_keep():
    assert kept_guarantee(spec(), None, {}).subscription_guarantee == {}
