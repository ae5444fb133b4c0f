# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replaying a trace (benchmarks/traces) on the local cluster: what is recorded
(``records``), what is measured from it (``metrics``), the picture (``picture``), and
the replay itself (``replayer``, the only part that talks to the cluster)."""
