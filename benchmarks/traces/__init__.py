# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A day of traffic as a file: the trace format (``model``), its rules (``validate``), a
seeded generator of tidal days (``generate``), the YAML loader (``load``) and the summaries
the command-line tools print (``summary``). See docs/trace-replay.md."""
