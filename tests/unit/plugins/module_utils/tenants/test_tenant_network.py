# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The networks a tenant's egress keeps out: what the cluster tells (rule
cluster-networks) and what each egress CIDR loses (rule egress-outside-cluster)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.gpucloud.platform.plugins.module_utils.common.errors import (
    PlatformValidationError,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.network import (
    METADATA_CIDR,
    ClusterNetworks,
    cluster_networks,
    discovered_networks,
    egress_blocks,
)
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.plan import plan_tenant
from ansible_collections.gpucloud.platform.plugins.module_utils.tenants.spec import (
    parse_tenant_spec,
)
from ansible_collections.gpucloud.platform.tests.unit.plugins.module_utils.tenants.tenant_objects import (
    GPU,
    METADATA,
    gpu_nodes,
    networks_of,
    node,
    service_cidr,
)


def net(value):
    return ipaddress.ip_network(value)


def nets(*values):
    return [net(v) for v in values]


def bare_node(spec=None, addresses=None):
    return {
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": spec or {},
        "status": {"addresses": addresses or []},
    }


# --------------------------------------------------------------------------
# discovered_networks
# --------------------------------------------------------------------------


def test_pod_cidrs_of_every_node_collapse_into_the_pod_network():
    found = networks_of([*gpu_nodes(8), service_cidr()])
    # eight /24s, 10.244.0.0 to 10.244.7.0: one /21
    assert found.pods == nets("10.244.0.0/21")
    assert found.services == nets("10.96.0.0/12")
    # 172.18.0.2 to 172.18.0.9, each a /32, as few networks as cover exactly them
    assert found.nodes == nets("172.18.0.2/31", "172.18.0.4/30", "172.18.0.8/31")


def test_pod_cidrs_win_over_pod_cidr():
    both = bare_node({"podCIDR": "10.1.0.0/24", "podCIDRs": ["10.2.0.0/24"]})
    only_old = bare_node({"podCIDR": "10.3.0.0/24"})
    empty_list = bare_node({"podCIDR": "10.4.0.0/24", "podCIDRs": []})
    found = discovered_networks([both, only_old, empty_list], [])
    # spec.podCIDRs when a node has it, spec.podCIDR otherwise (an empty list is none)
    assert found.pods == nets("10.2.0.0/24", "10.3.0.0/24", "10.4.0.0/24")


def test_dual_stack_nodes_give_ipv4_and_ipv6_networks():
    dual = [
        bare_node(
            {
                "podCIDR": f"10.244.{i}.0/24",
                "podCIDRs": [f"10.244.{i}.0/24", f"fd00:10:244:{i}::/64"],
            },
            [
                {"type": "InternalIP", "address": f"172.18.0.{i + 2}"},
                {"type": "InternalIP", "address": f"fc00:f853:ccd:e793::{i + 2}"},
            ],
        )
        for i in range(2)
    ]
    found = discovered_networks(dual, [service_cidr(("10.96.0.0/16", "fd00:10:96::/112"))])
    # IPv4 first, then IPv6, each collapsed
    assert found.pods == nets("10.244.0.0/23", "fd00:10:244::/63")
    assert found.services == nets("10.96.0.0/16", "fd00:10:96::/112")
    assert found.nodes == nets("172.18.0.2/31", "fc00:f853:ccd:e793::2/127")


def test_bad_values_are_ignored():
    weird = [
        bare_node(
            {"podCIDRs": ["not-a-cidr", "10.244.1.1/24", "10.244.2.0/33", "", None, "10.244.3.0"]},
            [
                {"type": "InternalIP", "address": "node-1.example"},
                {"type": "InternalIP", "address": ""},
                {"type": "InternalIP"},
                {"type": "Hostname", "address": "10.0.0.9"},  # not an address of the node's IPs
                {"type": "InternalDNS", "address": "10.0.0.10"},
                {"type": "ExternalIP", "address": "198.51.100.7"},
            ],
        ),
        {"kind": "Node", "metadata": {"name": "bare"}},  # no spec, no status
        bare_node({"podCIDR": "10.244.4.0/24"}),
    ]
    service_cidrs = [
        {"kind": "ServiceCIDR", "metadata": {"name": "empty"}},
        {"kind": "ServiceCIDR", "metadata": {"name": "x"}, "spec": {"cidrs": ["bad", None]}},
        service_cidr(),
    ]
    found = discovered_networks(weird, service_cidrs)
    assert found.pods == nets("10.244.4.0/24")
    assert found.nodes == nets("198.51.100.7/32")
    assert found.services == nets("10.96.0.0/12")


def test_duplicates_and_nested_networks_collapse():
    nodes = [
        bare_node({"podCIDRs": ["10.244.0.0/24"]}, [{"type": "InternalIP", "address": "10.0.0.1"}]),
        bare_node({"podCIDRs": ["10.244.0.0/24"]}, [{"type": "ExternalIP", "address": "10.0.0.1"}]),
        bare_node({"podCIDRs": ["10.244.0.0/16"]}),
    ]
    found = discovered_networks(nodes, [service_cidr(), service_cidr(name="second")])
    assert found.pods == nets("10.244.0.0/16")
    assert found.nodes == nets("10.0.0.1/32")
    assert found.services == nets("10.96.0.0/12")


def test_a_cluster_that_tells_nothing_gives_nothing():
    assert discovered_networks([], []) == ClusterNetworks()


# --------------------------------------------------------------------------
# cluster_networks
# --------------------------------------------------------------------------

FOUND = ClusterNetworks(
    pods=nets("10.244.0.0/21"), services=nets("10.96.0.0/12"), nodes=nets("172.18.0.2/32")
)


def test_given_networks_win_over_discovered_ones_and_nodes_are_kept():
    networks, errors = cluster_networks(net("10.0.0.0/14"), net("10.100.0.0/16"), FOUND)
    assert errors == []
    assert networks == ClusterNetworks(
        pods=nets("10.0.0.0/14"), services=nets("10.100.0.0/16"), nodes=nets("172.18.0.2/32")
    )


def test_discovered_networks_serve_where_none_is_given():
    networks, errors = cluster_networks(None, net("10.100.0.0/16"), FOUND)
    assert errors == []
    assert networks.pods == FOUND.pods and networks.services == nets("10.100.0.0/16")


def test_a_network_neither_given_nor_discovered_is_refused_naming_the_field():
    _networks, errors = cluster_networks(None, None, ClusterNetworks())
    assert [e.field for e in errors] == ["pod_cidr", "service_cidr"]
    pod, svc = (e.message for e in errors)
    assert "no node has spec.podCIDRs" in pod and pod.endswith("give the cluster's pod CIDR")
    assert "no ServiceCIDR object" in svc and svc.endswith("give the cluster's service CIDR")
    _networks, errors = cluster_networks(None, None, ClusterNetworks(pods=nets("10.244.0.0/16")))
    assert [e.field for e in errors] == ["service_cidr"]


def test_plan_refuses_a_cluster_that_tells_no_networks():
    spec = parse_tenant_spec({"name": "a", "subscription": {GPU: 4}})
    with pytest.raises(PlatformValidationError) as exc:
        plan_tenant(spec, {}, discovered=ClusterNetworks())
    assert [e.field for e in exc.value.errors] == ["pod_cidr", "service_cidr"]
    with pytest.raises(PlatformValidationError):
        plan_tenant(spec, {})  # nothing discovered is nothing guessed either


# --------------------------------------------------------------------------
# egress_blocks
# --------------------------------------------------------------------------

CLUSTER = ClusterNetworks(
    pods=nets("10.244.0.0/16"),
    services=nets("10.96.0.0/12"),
    nodes=nets("172.18.0.2/31", "172.18.0.4/32"),
)


def blocks(egress, networks=CLUSTER, **flags):
    out, errors = egress_blocks(nets(*egress), networks, **flags)
    return [(str(c), e) for c, e in out], errors


def test_node_addresses_and_metadata_are_cut_out_by_default():
    out, errors = blocks(["0.0.0.0/0"])
    assert errors == []
    assert out == [
        (
            "0.0.0.0/0",
            [
                "10.96.0.0/12",
                "10.244.0.0/16",
                "169.254.169.254/32",
                "172.18.0.2/31",
                "172.18.0.4/32",
            ],
        )
    ]


def test_the_flags_open_the_nodes_and_the_metadata_address():
    out, errors = blocks(["0.0.0.0/0"], egress_to_nodes=True)
    assert errors == []
    assert out == [("0.0.0.0/0", ["10.96.0.0/12", "10.244.0.0/16", METADATA])]
    out, _errors = blocks(["0.0.0.0/0"], egress_to_metadata=True)
    assert METADATA not in out[0][1] and "172.18.0.4/32" in out[0][1]
    out, _errors = blocks(["0.0.0.0/0"], egress_to_nodes=True, egress_to_metadata=True)
    # never the pod and service networks
    assert out == [("0.0.0.0/0", ["10.96.0.0/12", "10.244.0.0/16"])]


def test_an_egress_cidr_that_contains_no_cluster_network_gets_no_except():
    out, errors = blocks(["203.0.113.0/24", "172.18.1.0/24"])
    assert errors == []
    assert out == [("203.0.113.0/24", []), ("172.18.1.0/24", [])]


def test_only_the_networks_inside_each_cidr_are_cut_out():
    out, errors = blocks(["172.18.0.0/30", "10.0.0.0/8"])
    assert errors == []
    assert out == [
        ("172.18.0.0/30", ["172.18.0.2/31"]),
        ("10.0.0.0/8", ["10.96.0.0/12", "10.244.0.0/16"]),
    ]


@pytest.mark.parametrize(
    ("cidr", "what"),
    [("10.244.3.0/24", "pod"), ("10.244.0.0/16", "pod"), ("10.96.0.1/32", "service")],
)
def test_egress_inside_the_pod_or_service_network_is_refused_whatever_the_flags(cidr, what):
    for flags in ({}, {"egress_to_nodes": True, "egress_to_metadata": True}):
        _out, errors = blocks(["0.0.0.0/0", cidr], **flags)
        assert [e.field for e in errors] == ["egress_cidrs[1]"]
        assert f"inside the cluster's {what} CIDR" in errors[0].message


def test_egress_to_the_metadata_address_itself_needs_the_flag():
    _out, errors = blocks([METADATA])
    assert [e.field for e in errors] == ["egress_cidrs[0]"]
    assert errors[0].message.startswith(f"{METADATA} is the cloud metadata address")
    assert errors[0].message.endswith("or set egress_to_metadata: true")
    out, errors = blocks([METADATA], egress_to_metadata=True)
    assert errors == [] and out == [(METADATA, [])]


def test_egress_to_a_node_address_needs_the_flag():
    _out, errors = blocks(["172.18.0.3/32"])
    assert [e.field for e in errors] == ["egress_cidrs[0]"]
    assert "lies inside the cluster's node addresses 172.18.0.2/31" in errors[0].message
    assert errors[0].message.endswith("or set egress_to_nodes: true")
    out, errors = blocks(["172.18.0.3/32"], egress_to_nodes=True)
    assert errors == [] and out == [("172.18.0.3/32", [])]


def test_an_egress_cidr_made_of_cluster_networks_only_is_refused():
    # An except may not be the whole CIDR: the API server refuses such a NetworkPolicy.
    _out, errors = blocks(["172.18.0.2/31"])
    assert [e.field for e in errors] == ["egress_cidrs[0]"]
    assert "is the cluster's node addresses" in errors[0].message
    split = ClusterNetworks(pods=nets("10.244.0.0/16"), services=nets("10.245.0.0/16"))
    _out, errors = blocks(["10.244.0.0/15"], split)
    assert [e.field for e in errors] == ["egress_cidrs[0]"]
    assert errors[0].message == (
        "10.244.0.0/15 holds nothing but the cluster's own networks "
        "(10.244.0.0/16, 10.245.0.0/16); give external networks only"
    )


def test_ipv6_egress_loses_only_ipv6_networks():
    dual = ClusterNetworks(
        pods=nets("10.244.0.0/16", "fd00:10:244::/56"),
        services=nets("10.96.0.0/12", "fd00:10:96::/112"),
        nodes=nets("172.18.0.2/32", "fc00::2/128"),
    )
    out, errors = blocks(["::/0"], dual)
    assert errors == []
    assert out == [("::/0", ["fc00::2/128", "fd00:10:96::/112", "fd00:10:244::/56"])]


# An invariant of every NetworkPolicy the module writes: each except lies inside its CIDR
# and is never the CIDR itself (the API server refuses that), excepts do not overlap, and
# every network to keep out that lies in the CIDR is cut out; an egress CIDR inside a
# network to keep out is refused.

_BASE = int(ipaddress.IPv4Address("10.0.0.0"))


@st.composite
def ipv4_networks(draw, min_prefix=16):
    prefix = draw(st.integers(min_prefix, 32))
    address = _BASE + draw(st.integers(0, 2**16 - 1))
    return ipaddress.ip_network(f"{ipaddress.IPv4Address(address)}/{prefix}", strict=False)


hosts = st.integers(0, 2**16 - 1).map(lambda i: net(f"{ipaddress.IPv4Address(_BASE + i)}/32"))


@st.composite
def scenarios(draw):
    """A cluster, and egress CIDRs drawn at random or from around its own networks (one of
    them, or a network a few bits wider), where the edge cases are."""
    pods = draw(st.lists(ipv4_networks(), min_size=1, max_size=2))
    services = draw(st.lists(ipv4_networks(), min_size=1, max_size=2))
    nodes = draw(st.lists(hosts, max_size=5))
    own = [*pods, *services, *nodes, net(METADATA_CIDR)]
    near = st.tuples(st.sampled_from(own), st.integers(0, 3)).map(
        lambda t: t[0].supernet(prefixlen_diff=min(t[1], t[0].prefixlen))
    )
    egress = draw(st.lists(st.one_of(ipv4_networks(min_prefix=8), near), min_size=1, max_size=3))
    return egress, ClusterNetworks(pods=pods, services=services, nodes=nodes)


@given(scenarios(), st.booleans(), st.booleans())
def test_excepts_lie_strictly_inside_their_cidr(scenario, to_nodes, to_metadata):
    egress, networks = scenario
    out, errors = egress_blocks(egress, networks, to_nodes, to_metadata)
    refused = {e.field for e in errors}
    closed = [*networks.pods, *networks.services]
    if not to_nodes:
        closed += networks.nodes
    if not to_metadata:
        closed.append(net(METADATA_CIDR))
    assert [cidr for cidr, _unused in out] == egress
    for i, (cidr, excepts) in enumerate(out):
        cut = [net(e) for e in excepts]
        if any(cidr.subnet_of(n) for n in closed):
            assert f"egress_cidrs[{i}]" in refused
        if f"egress_cidrs[{i}]" in refused:
            continue  # nothing is written: a refused CIDR's excepts do not matter
        for e in cut:
            assert e.subnet_of(cidr) and e != cidr
        assert all(not a.overlaps(b) for j, a in enumerate(cut) for b in cut[j + 1 :])
        for n in closed:
            if n.subnet_of(cidr):
                assert any(n.subnet_of(e) for e in cut), (n, excepts)


@given(st.lists(st.tuples(st.integers(0, 255), st.integers(16, 28)), max_size=6))
def test_discovered_pod_networks_cover_every_node_cidr_without_overlap(cidrs):
    nodes = [bare_node({"podCIDRs": [f"10.{a}.0.0/{p}"]}) for a, p in cidrs]
    found = discovered_networks(nodes, [])
    for a, p in cidrs:
        assert any(net(f"10.{a}.0.0/{p}").subnet_of(n) for n in found.pods)
    assert all(not a.overlaps(b) for i, a in enumerate(found.pods) for b in found.pods[i + 1 :])


# --------------------------------------------------------------------------
# Before any request, and against the cluster's networks
# --------------------------------------------------------------------------


def tenant(**over):
    return {"name": "a", "subscription": {GPU: 8}, **over}


def test_egress_into_a_given_network_is_an_input_error():
    with pytest.raises(PlatformValidationError) as exc:
        parse_tenant_spec(tenant(pod_cidr="10.244.0.0/16", egress_cidrs=["10.244.9.0/24"]))
    assert [e.field for e in exc.value.errors] == ["egress_cidrs[0]"]
    with pytest.raises(PlatformValidationError) as exc:
        parse_tenant_spec(tenant(egress_cidrs=[METADATA]))
    assert [e.field for e in exc.value.errors] == ["egress_cidrs[0]"]
    parse_tenant_spec(tenant(egress_cidrs=[METADATA], egress_to_metadata=True))


def test_egress_into_a_discovered_network_is_refused_by_the_plan():
    # Not given, the pod network is not known before the cluster is read.
    spec = parse_tenant_spec(tenant(egress_cidrs=["0.0.0.0/0", "10.244.3.0/24"]))
    found = networks_of([node("n0", 3), service_cidr()])
    with pytest.raises(PlatformValidationError) as exc:
        plan_tenant(spec, {}, discovered=found)
    assert [e.field for e in exc.value.errors] == ["egress_cidrs[1]"]
    assert "inside the cluster's pod CIDR 10.244.3.0/24" in exc.value.messages[0]


def test_plan_builds_the_policy_from_the_discovered_networks():
    spec = parse_tenant_spec(tenant())
    found = networks_of([*gpu_nodes(2), service_cidr()])
    policy = plan_tenant(spec, {}, discovered=found).objects[3]
    assert policy["spec"]["egress"][2] == {
        "to": [
            {
                "ipBlock": {
                    "cidr": "0.0.0.0/0",
                    "except": ["10.96.0.0/12", "10.244.0.0/23", METADATA, "172.18.0.2/31"],
                }
            }
        ]
    }
