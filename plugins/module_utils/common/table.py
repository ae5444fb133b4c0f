# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small table as aligned lines, for the ``summary`` an info module returns and a
playbook prints (rule run-summary). Pure: text in, lines out."""

from __future__ import annotations

from collections.abc import Collection, Sequence

# Between two columns.
GAP = "  "


def aligned(rows: Sequence[Sequence[object]], right: Collection[int] = ()) -> list[str]:
    """``rows`` (the first one usually the heading) as lines, each column as wide as its
    widest cell and two spaces apart; the columns numbered in ``right`` (numbers) are
    aligned right, the others left. A row shorter than the others is padded with empty
    cells; no line ends in spaces."""
    cells = [[str(c) for c in row] for row in rows]
    columns = max((len(r) for r in cells), default=0)
    for row in cells:
        row.extend([""] * (columns - len(row)))
    widths = [max((len(r[i]) for r in cells), default=0) for i in range(columns)]
    return [
        GAP.join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in cells
    ]


def shortened(items: Sequence[object], most: int = 4) -> str:
    """``a, b, c``; past ``most`` items the first ``most`` and how many more."""
    shown = ", ".join(str(i) for i in items[:most])
    return f"{shown} and {len(items) - most} more" if len(items) > most else shown
