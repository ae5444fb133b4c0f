# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run records in the cluster through a ``Cluster`` (I/O): an Event on an object
it acted on, and its entry at the head of its bounded history ConfigMap.

One writer for the two runs that record: the queue arbiter (``ArbiterEvicted`` and
``ArbiterMadeRoom`` Events, ConfigMap ``queue-arbiter-history``, rule arbiter-history)
and the spot reclaim (``SpotReclaimed`` Events, ConfigMap ``spot-reclaim-history``, rule
reclaim-history). The Event body is ``common/run_event``, the history's rule and
ConfigMap ``common/history`` (both pure).

``record_event`` and ``record_history`` are best-effort writes. Each comes after the
run's evictions or deletions, which stand whatever happens next, so a write that fails
is only warned about and the run goes on to report what it did (and, for the spot
reclaim, to raise the queues' reclaim counts). Each catches exactly what a request
through ``Cluster`` raises when the cluster, not the code, says no:

* ``ApiException``: the API server answered and refused. Examples: RBAC forbids Events or
  ConfigMaps in the namespace (403), the namespace is being deleted, an Event of the
  same name exists (409, ``ConflictError``), the object is invalid (422), the flow stays
  throttled after ``Cluster``'s retries (429, ``TooManyRequestsError``), or the server
  fails (5xx). Both writers caught it before they were one.
* ``TransportError``: no answer at all, because the API server is down or unreachable or
  the connection was cut. The arbiter caught it; the spot reclaim did not, so a dropped
  connection on its Event or history failed the run as "cannot reach the Kubernetes API
  server" with ``changed: false``, although jobs were already deleted, and named none of
  them. Now the spot reclaim warns too and goes on: its next delete, if the server is
  still gone, fails as a ``PartialWrite`` that names the jobs deleted so far.

Nothing else is caught: any other exception is a fault in the run, not the cluster's
answer, and must fail it. ``append_history`` is the same history write without the
catch, for a caller that must know it failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.common.warnings import warn

from ..common.history import history_manifest, push_history, read_history
from ..common.names import PLATFORM_NAMESPACE, QUEUE_API
from ..common.stop_counts import count_patch, raised_count
from .cluster import ApiException, Cluster, ConflictError, TransportError, api_error_message

# Reads and patches of one Queue's stop count before it is given up as changing too often.
STOP_COUNT_ATTEMPTS = 5


def record_event(cluster: Cluster, manifest: Mapping[str, Any], what: str) -> bool:
    """Create the Event ``manifest`` (``common/run_event.run_event``); False, and the
    warning ``<what> Event could not be recorded: <why>``, when the cluster refuses it
    or does not answer. ``what`` names the object and the Event, for example
    ``tenant-a/task-d was evicted but its ArbiterEvicted``."""
    try:
        cluster.create(manifest)
    except (ApiException, TransportError) as exc:  # best effort: see the module docstring
        warn(f"{what} Event could not be recorded: {api_error_message(exc)}")
        return False
    return True


def read_run_history(cluster: Cluster, name: str, namespace: str = PLATFORM_NAMESPACE) -> list[Any]:
    """The entries of the history ConfigMap ``name`` (one GET); [] when it is missing."""
    return read_history(cluster.get("v1", "ConfigMap", name, namespace))


def append_history(
    cluster: Cluster,
    name: str,
    entry: Mapping[str, Any],
    size: int,
    namespace: str = PLATFORM_NAMESPACE,
) -> list[Any]:
    """Put ``entry`` at the head of the history ConfigMap ``name``, keeping at most
    ``size`` entries (``common/history.push_history``): one GET and one server-side
    apply. Returns the entries written; the cluster's errors are raised."""
    entries = push_history(read_run_history(cluster, name, namespace), entry, size)
    cluster.apply(history_manifest(name, entries, namespace))
    return entries


def record_history(
    cluster: Cluster,
    name: str,
    entry: Mapping[str, Any],
    size: int,
    what: str,
    namespace: str = PLATFORM_NAMESPACE,
) -> list[Any]:
    """``append_history``, best effort: when the cluster refuses or does not answer,
    [] and the warning ``<what> could not be added to ConfigMap <namespace>/<name>:
    <why>``. ``what`` names the run, for example ``the reclaim``."""
    try:
        return append_history(cluster, name, entry, size, namespace)
    except (ApiException, TransportError) as exc:  # best effort: see the module docstring
        warn(f"{what} could not be added to ConfigMap {namespace}/{name}: {api_error_message(exc)}")
        return []


def raise_stop_counts(
    cluster: Cluster,
    annotation: str,
    jobs_per_queue: Mapping[str, int],
    what: str,
    noun: str,
    listed: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, int]]:
    """Raise each Queue's count in ``annotation`` by the jobs a run stopped in it (rule
    stop-count, ``common/stop_counts``); returns the counts written, before and after, by
    queue. Each Queue is read (one GET) and patched against that version; a conflict reads
    it again. With ``listed`` (the Queues the run already listed, by name) the listed
    version is patched first, and a Queue not listed counts nothing. Best effort, as the
    Events are: the jobs are stopped either way, so a count that cannot be written is
    warned about, as ``the <what> count of queue <name> ...``, and left out."""
    counted: dict[str, dict[str, int]] = {}
    for name, jobs in jobs_per_queue.items():
        queue = listed.get(name) if listed is not None else None
        for attempt in range(STOP_COUNT_ATTEMPTS):
            try:
                if listed is None or attempt > 0:
                    queue = cluster.get(QUEUE_API, "Queue", name)
                if queue is None:
                    break
                cluster.merge_patch(QUEUE_API, "Queue", name, count_patch(queue, annotation, jobs))
                counted[name] = raised_count(queue, annotation, jobs)
                break
            except ConflictError:
                continue
            except (ApiException, TransportError) as exc:  # best effort: see above
                warn(
                    f"the {what} count of queue {name} could not be raised by {jobs}: "
                    f"{api_error_message(exc)}"
                )
                break
        else:
            warn(f"the {what} count of queue {name} kept changing; {jobs} {noun} not counted")
    return counted
