"""A pipe table: Markdown's, and the plain-text sections' (load, iostat) that print one too."""

from __future__ import annotations

from typing import Sequence


def md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        # a '|' in a label or an error would otherwise start a new column
        return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(map(cell, columns)) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"
