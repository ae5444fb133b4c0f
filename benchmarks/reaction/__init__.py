# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parts of ``benchmarks/event_reaction.py``: the running rulebook, the schedule it is
measured against, and the changes both react to."""
