# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module ``usage_report`` for a federation (option ``members``): its reads, not pure.

The connection is the Karmada API server: one list of ``Cluster`` objects (where each
member is, rule federation-member), one list of Namespaces labelled
``platform.io/tenant`` (Karmada's templates: the federation's tenants), then each member's
Prometheus read as one cluster's is (``metering/service.read_prometheus``). The facts are
merged by rule federation-ledger (``federation/ledger``) and billed by ``metering``'s pure
plan, unchanged. Without ``members`` the run is one cluster's, exactly
(``metering/service.gather_report``).
"""

from __future__ import annotations

from dataclasses import replace

from ..common.errors import Refused
from ..kube.cluster import Cluster
from ..kube.flow import Flow
from ..metering import service
from ..metering.inputs import ReportRequest
from ..metering.report import UsageFacts, UsagePlanned
from .ledger import MemberUsage, asked_members, merge_member_usage
from .members import CLUSTER_API, read_member


def read_member_usage(request: ReportRequest, name: str, url: str) -> UsageFacts:
    """One member's Prometheus, as one cluster's is read; a failure names the member (its
    field, ``members.<name>``) rather than ``prometheus_url``."""
    try:
        return service.read_prometheus(replace(request, prometheus_url=url, members=()))
    except service.PrometheusError as exc:
        said = str(exc).removeprefix("prometheus_url: ")
        raise Refused(f"members.{name}: {said}", prometheus_url=url, member=name) from None


def gather_federation_report(request: ReportRequest, cluster: Cluster) -> UsageFacts:
    """With ``members``: Karmada's Clusters and Namespaces, then each member's Prometheus,
    merged into one ledger's facts (rule federation-ledger); without, one cluster's reads."""
    if not request.members:
        return service.gather_report(request, cluster)
    urls = dict(request.members)
    clusters = asked_members(cluster.list(CLUSTER_API, "Cluster"), urls)
    namespaces = service.list_tenant_namespaces(cluster)
    readings = [
        MemberUsage(member, read_member_usage(request, member.name, urls[member.name]))
        for member in (read_member(c) for c in clusters)
    ]
    return merge_member_usage(readings, namespaces)


# Module usage_report, for one cluster or a federation: only the reads differ.
FEDERATION_REPORT_FLOW: Flow[ReportRequest, UsageFacts, UsagePlanned] = replace(
    service.REPORT_FLOW, gather=gather_federation_report
)
