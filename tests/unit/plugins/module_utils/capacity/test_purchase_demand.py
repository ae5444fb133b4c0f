# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule purchase-growth and rule purchase-demand: what a purchase newly sells."""

from __future__ import annotations

from decimal import Decimal

from ansible_collections.gpucloud.platform.plugins.module_utils.capacity.purchase import (
    purchase_demand,
    purchase_growth,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.workload.pool import (
    TenantCommitment,
)

GPU = "nvidia.com/gpu"


def commitment(tenant, sub=0, payg=0):
    zero = {GPU: Decimal(0), "cpu": Decimal(0), "memory": Decimal(0)}
    return TenantCommitment(
        tenant,
        subscription={**zero, GPU: Decimal(sub)},
        payg={**zero, GPU: Decimal(payg)},
    )


def test_purchase_growth_counts_only_what_grows():
    live = commitment("a", sub=10, payg=4)
    assert purchase_growth(live, {GPU: Decimal(10)}, None) == ({}, {})
    assert purchase_growth(live, {GPU: Decimal(8)}, {GPU: Decimal(2)}) == ({}, {})
    assert purchase_growth(live, {GPU: Decimal(12)}, {GPU: Decimal(5)}) == (
        {GPU: Decimal(12)},
        {GPU: Decimal(5)},
    )
    # A new tenant: everything it asks for grows; a resource left out of payg is 0.
    assert purchase_growth(None, {GPU: Decimal(1), "cpu": Decimal(0)}, {"cpu": Decimal(2)}) == (
        {GPU: Decimal(1)},
        {"cpu": Decimal(2)},
    )


def test_purchase_demand_adds_the_growth_of_subscription_and_payg():
    live = commitment("a", sub=10, payg=4)
    assert purchase_demand(live, {GPU: Decimal(16)}, {GPU: Decimal(6)})[GPU] == 6 + 2
    # What shrinks frees nothing for the other part; a PAYG grant left out is kept.
    assert purchase_demand(live, {GPU: Decimal(8)}, {GPU: Decimal(7)})[GPU] == 3
    assert purchase_demand(live, {GPU: Decimal(12)}, None)[GPU] == 2
    assert purchase_demand(live, {GPU: Decimal(10)}, {GPU: Decimal(4)})[GPU] == 0
    # A new tenant: everything it asks for.
    assert purchase_demand(None, {GPU: Decimal(12)}, {GPU: Decimal(4)})[GPU] == 16
