# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule gang-fits-nodes: whether a gang's pods fit the nodes' free GPUs (pure).

Each pod goes on one node, first fit, largest pod first; a gang runs whole or not at all.
First fit can say no where a cleverer packing says yes; with pods of 1 to 8 GPUs on 8-GPU
nodes it rarely does. Used by rule spot-lending (a share is lent only to a gang that can
be placed now) and by the trace replay's waiting causes.
"""

from __future__ import annotations

from collections.abc import Iterable


def place_gang(pods: Iterable[int], free: Iterable[int]) -> list[int] | None:
    """Rule gang-fits-nodes: the nodes' free GPUs after placing the pods, or None when
    they do not all fit."""
    left = sorted(free, reverse=True)
    for gpus in sorted(pods, reverse=True):
        for i, room in enumerate(left):
            if room >= gpus:
                left[i] -= gpus
                break
        else:
            return None
    return left


def gang_fits_nodes(pods: Iterable[int], free: Iterable[int]) -> bool:
    """Rule gang-fits-nodes: whether pods of these GPUs fit the nodes' free GPUs."""
    return place_gang(pods, free) is not None
