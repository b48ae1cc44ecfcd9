"""``fakegrad-lint rule``: the rule documentation, straight from the catalogue.

Everything printed here comes from the same :class:`~fakegrad_lint.rules.base.Rule`
objects the analyzer and the tests use (their ``invalid``/``valid`` examples are
checked by ``tests/test_rule_docs.py``), so the docs cannot drift from the code:

    fakegrad-lint rule FGL001                  # what, why, example, fixed example, fix safety
    fakegrad-lint rule fake-grad-hazard        # by name
    fakegrad-lint rule --all                   # one line per rule
    fakegrad-lint rule --all --output-format json
    fakegrad-lint rule --all --output-format markdown > docs/rules.md

``docs/rules.md`` is exactly ``rule --all --output-format markdown`` (a test keeps
it so). The rendering lives in :mod:`fakegrad_lint.rules.docs` (the SARIF
reporter embeds the same text in each rule's ``help``); this module is the command.
"""

from __future__ import annotations

import argparse
import json
import sys

from fakegrad_lint.rules import RULES
from fakegrad_lint.rules.docs import (  # noqa: F401  (TABLE_COLUMNS, fix_label, table_rows: the docs' API)
    TABLE_COLUMNS,
    all_markdown,
    all_text,
    fix_label,
    lookup,
    rule_json,
    rule_markdown,
    rule_text,
    table_rows,
)

PROG = "fakegrad-lint rule"
DOC_FORMATS = ("text", "json", "markdown")  # of this command, not of `check`


# ---------------------------------------------------------------------------
# command line


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like the main command
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Explain a rule: what it finds, why, an example, the fix and its safety.",
    )
    p.add_argument("rules", nargs="*", metavar="RULE", help="a rule code (FGL001) or name (fake-grad-hazard)")
    p.add_argument("--all", action="store_true", help="list every rule")
    p.add_argument(
        "--output-format",
        "--format",
        dest="output_format",
        choices=DOC_FORMATS,
        default="text",
        help="text (default), json or markdown",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    fmt = args.output_format
    if args.all and args.rules:
        parser.error("give rule codes or --all, not both")
    if args.all:
        if fmt == "json":
            out = json.dumps([rule_json(r) for r in RULES], indent=2, ensure_ascii=False) + "\n"
        elif fmt == "markdown":
            out = all_markdown()
        else:
            out = all_text()
        sys.stdout.write(out)
        return 0
    if not args.rules:
        parser.error("give a rule code (e.g. FGL001) or --all")
    chunks = []
    found = []
    for key in args.rules:
        rule = lookup(key)
        if rule is None:
            known = ", ".join(r.code for r in RULES)
            sys.stderr.write(f"{PROG}: error: unknown rule {key!r} (known rules: {known})\n")
            return 2
        if fmt == "json":
            found.append(rule_json(rule))
        elif fmt == "markdown":
            chunks.append(rule_markdown(rule))
        else:
            chunks.append(rule_text(rule))
    if fmt == "json":
        data = found[0] if len(found) == 1 else found
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\n".join(chunks))
    return 0


if __name__ == "__main__":  # python -m fakegrad_lint.cli.rule_docs
    raise SystemExit(main())
