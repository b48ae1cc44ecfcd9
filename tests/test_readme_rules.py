"""The README's rules table (``Code | Name | Default | Fix | Summary``) matches
the rule catalogue exactly: same rules, same order, same names, defaults, fix
labels and summaries. ``fakegrad-lint rule --all --output-format markdown``
prints a table in this format to paste from."""

from __future__ import annotations

import re
from pathlib import Path

from fakegrad_lint.cli import rule_docs

ROOT = Path(__file__).resolve().parents[1]
HEADER = list(rule_docs.TABLE_COLUMNS)
LINK = re.compile(r"^\[([^\]]*)\]\(([^)]*)\)$")


def split_row(line: str) -> list[str]:
    line = line.strip()
    assert line.startswith("|") and line.endswith("|"), line
    cells = re.split(r"(?<!\\)\|", line[1:-1])
    return [c.strip().replace("\\|", "|") for c in cells]


def plain(cell: str) -> str:
    """A cell's text: link text instead of the link, no code backticks."""
    m = LINK.match(cell)
    if m:
        cell = m.group(1)
    return cell.replace("`", "").strip()


def rules_tables(markdown: str) -> list[list[list[str]]]:
    """Every table whose header is exactly :data:`HEADER`, as raw cell rows."""
    lines = markdown.splitlines()
    tables = []
    for i, line in enumerate(lines):
        if line.strip().startswith("|") and [plain(c) for c in split_row(line)] == HEADER:
            assert i + 1 < len(lines) and re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", lines[i + 1].strip()), "no separator row"
            rows = []
            for body in lines[i + 2:]:
                if not body.strip().startswith("|"):
                    break
                rows.append(split_row(body))
            tables.append(rows)
    return tables


def check_table(markdown: str) -> None:
    tables = rules_tables(markdown)
    assert len(tables) == 1, f"expected one `{' | '.join(HEADER)}` table, found {len(tables)}"
    (rows,) = tables
    for row in rows:
        assert len(row) == len(HEADER), row
        m = LINK.match(row[0])
        if m:  # a link on the code must point at that rule's docs anchor
            assert m.group(2).endswith("#" + plain(row[0]).lower()), row[0]
    got = [tuple(plain(c) for c in row) for row in rows]
    want = [tuple(c.replace("`", "") for c in row) for row in rule_docs.table_rows()]
    assert got == want


def test_readme_rules_table_matches_the_catalogue():
    check_table((ROOT / "README.md").read_text(encoding="utf-8"))


def test_generated_table_passes_and_a_stale_one_fails():
    page = rule_docs.all_markdown()
    check_table(page)  # the generated docs page has the same table
    (rows,) = rules_tables(page)
    first_summary = rows[0][4]
    for stale in (
        page.replace(first_summary, first_summary + " (old)", 1),  # summary drifted
        page.replace("| off |", "| on |", 1),  # default drifted
        re.sub(r"\n\| \[FGL004\][^\n]*", "", page, count=1),  # a rule missing
    ):
        try:
            check_table(stale)
        except AssertionError:
            continue
        raise AssertionError("a stale rules table passed the check")
