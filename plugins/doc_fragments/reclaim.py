# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of every module that reclaims spot GPUs, whose argument spec is
``RECLAIM_OPTIONS`` in module_utils/spot/reclaim.py. A reclaim counts the pool of
``gpucloud.platform.pool``: a module extends both."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  history_size:
    description: How many reclaims the history ConfigMap C(spot-reclaim-history) keeps (newest first).
    type: int
    default: 100
  lease_duration:
    description:
      - Seconds the reclaim Lease (C(spot-reclaim) in C(platform-system)) is valid; a run that dies holding it blocks
        other reclaims for at most this long.
    type: int
    default: 60
  holder_identity:
    description:
      - The name a reclaim holds the Lease under, followed by an id of the run, so that two runs under one name still
        exclude each other. Defaults to the controller's host name and process id.
    type: str
  wait:
    description:
      - After a reclaim, wait until the GPUs it was for are actually free (the deleted spot jobs' pods are gone).
      - In check mode nothing is waited for.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait with O(wait=true) before failing.
    type: int
    default: 300
"""
