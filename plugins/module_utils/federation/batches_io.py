# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the federation modules write a plan in the Karmada API server: batch after batch,
each batch's server-side applies concurrently (``kube.Cluster.apply_all``), and what was
really written recorded for a failure part-way. Not pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..kube import cluster as kube
from ..queues.plan import DELETE
from ..tenants.changes import Changes, ObjectChange


def raise_first(results: Sequence[Any]) -> None:
    """The first failure of a concurrent batch, once every outcome has been recorded."""
    for outcome in results:
        if isinstance(outcome, BaseException):
            raise outcome


def write_batches(
    cluster: kube.Cluster,
    batches: Sequence[Sequence[ObjectChange]],
    changes: Changes,
    check_mode: bool,
    namespace_exists: bool,
) -> None:
    """Each batch after the one before. In check mode every write is the API server's dry
    run, except the namespaced objects of a namespace Karmada does not hold yet, which are
    only reported (there is nothing to dry-run them in)."""
    for batch in batches:
        sent = [
            (manifest, action)
            for manifest, action, _live in batch
            if not (check_mode and manifest["metadata"].get("namespace") and not namespace_exists)
        ]
        outcomes = cluster.apply_all([manifest for manifest, _action in sent])
        for (manifest, action), outcome in zip(sent, outcomes, strict=True):
            if not check_mode and not isinstance(outcome, BaseException):
                changes.wrote(manifest, action)
        raise_first(outcomes)


def delete_batches(
    cluster: kube.Cluster,
    batches: Sequence[Sequence[Mapping[str, Any]]],
    api_of: Mapping[str, str],
    changes: Changes,
    check_mode: bool,
) -> None:
    """Each batch's deletes concurrently, after the batch before; what was really deleted
    recorded (in check mode the API server's dry runs, nothing recorded)."""
    for objs in batches:
        outcomes = cluster.concurrently([_delete(cluster, obj, api_of) for obj in objs])
        for obj, outcome in zip(objs, outcomes, strict=True):
            if not check_mode and outcome is True:
                changes.wrote(obj, DELETE)
        raise_first(outcomes)


def _delete(
    cluster: kube.Cluster, obj: Mapping[str, Any], api_of: Mapping[str, str]
) -> Callable[[], bool]:
    meta = obj["metadata"]
    return lambda: cluster.delete(
        api_of[obj["kind"]], obj["kind"], meta["name"], namespace=meta.get("namespace")
    )
