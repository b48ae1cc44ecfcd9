"""The fix engine on libcst: one parse per file with fixable findings, findings mapped
to CST nodes through position metadata, and each fix a small structural transform.

A file only gets here when the analysis planned a fix for one of its findings (rare:
the fast path never imports libcst). :class:`CstFile` parses it once (cached for the
findings of one lint) and indexes its nodes by their :class:`~libcst.metadata.CodeRange`
(``PositionProvider``: 1-based lines, 0-based character columns, the tool's own
convention), so an ``ast`` position of the analysis names the CST node it stands for.

A fix is an :class:`Ops` record of structural operations on the original tree:

- ``insert_before(stmt, code)``: statements inserted right above a statement of any
  block (the start of a ``with`` body, after what the block does first; the comments
  that lead into that statement stay with it);
- ``hoist_one_line(with_)``: ``with m: a; b`` becomes an indented block with the
  inserted statements above ``a; b``;
- ``as_name(expr, name)``: ``as name`` added to the with-item of ``expr``;
- ``bind(stmt, name)``: ``stack.enter_context(m)`` as a statement becomes ``name = ...``;
- ``replace(node, code)``: an expression rewritten (a rename, a call wrapped);
- ``add_import(module, obj)``: through libcst's ``AddImportsVisitor`` (after a
  shebang, an encoding line, the docstring and ``__future__`` imports, at the end of
  the file's leading import block: always above any region).

:meth:`Ops.edits` runs one transformer over the tree, renders the module and diffs it
against the original into minimal :class:`~fakegrad_lint.findings.Edit` ranges: the
``--diff``, the JSON ``fix.edits`` and the fix loop all come from the transformed
module. Comments and formatting outside the edited nodes are kept by construction.

libcst reads ``\\n`` newlines only; the text is parsed with every line end written
``\\n`` (rows and columns are the same: a line end is one position either way), and
:func:`fakegrad_lint.fix.apply.fix_text` writes the file's own newline back.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

import libcst as cst
# libcst.codemod (AddImportsVisitor) is imported when a fix adds an import: it
# costs 0.4 s CPU, as much as libcst itself, and most fixes add none
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from fakegrad_lint.findings import Edit, Location

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


class CstError(Exception):
    """The file cannot be edited through libcst (it does not parse, a node is not found)."""


_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class CstFile:
    """One libcst parse of a source text, its positions and its scopes."""

    _cache: tuple[str, "CstFile"] | None = None

    @classmethod
    def of(cls, source: str) -> "CstFile":
        """The parse of ``source`` (the last one is kept: the findings of one file ask
        for it in turn)."""
        cached = cls._cache
        if cached is not None and cached[0] == source:
            return cached[1]
        made = cls(source)
        cls._cache = (source, made)
        return made

    def __init__(self, source: str):
        self.text = _NEWLINE_RE.sub("\n", source) if "\r" in source else source
        try:
            module = cst.parse_module(self.text)
        except Exception as exc:  # libcst.ParserSyntaxError and its internal errors
            raise CstError(f"libcst cannot parse the file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        # a form feed in the first indentation (it resets the column) is not an indentation
        # unit for the code a fix writes
        self.indent = module.default_indent.replace("\x0c", "") or "    "
        self.config = cst.PartialParserConfig(default_indent=self.indent, default_newline="\n")
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self._by_range: dict | None = None
        self._statements: list | None = None
        self._with_items: dict = {}
        self._scopes = None

    # -- nodes by position ---------------------------------------------------

    def _index(self) -> None:
        by_range: dict = {}
        statements = []
        for node, rng in self.positions.items():
            key = ((rng.start.line, rng.start.column), (rng.end.line, rng.end.column))
            by_range.setdefault(key, []).append(node)
            if isinstance(node, _STATEMENTS):
                statements.append((key, node))
            if isinstance(node, cst.WithItem):
                self._with_items[id(node.item)] = node
        self._by_range, self._statements = by_range, statements

    def node_at(self, start: tuple[int, int], end: tuple[int, int], kind=cst.BaseExpression):
        """The CST node of type ``kind`` spanning exactly ``start``-``end`` (the outermost
        one, when several do: ``x`` and its ``Name``)."""
        if self._by_range is None:
            self._index()
        found = [n for n in self._by_range.get((tuple(start), tuple(end)), ()) if isinstance(n, kind)]
        if not found:
            raise CstError(f"no {kind.__name__} at {start[0]}:{start[1]}-{end[0]}:{end[1]}")
        return max(found, key=lambda n: self._depth_key(n))

    @staticmethod
    def _depth_key(node) -> int:
        # the outermost node has the most code: parenthesised forms and wrappers
        return len(cst.Module(body=[]).code_for_node(node))

    def statement_at(self, position: tuple[int, int]):
        """The innermost statement whose range holds ``position``."""
        if self._statements is None:
            self._index()
        best, best_key = None, None
        for key, node in self._statements:
            if key[0] <= tuple(position) <= key[1]:
                if best_key is None or (key[0] >= best_key[0] and key[1] <= best_key[1]):
                    best, best_key = node, key
        if best is None:
            raise CstError(f"no statement at {position[0]}:{position[1]}")
        return best

    def with_item_of(self, expr):
        if self._by_range is None:
            self._index()
        item = self._with_items.get(id(expr))
        if item is None:
            raise CstError("the mode is not a with-item")
        return item

    # -- names -----------------------------------------------------------------

    def names_taken(self, node) -> set[str]:
        """The names a new binding in the scope of ``node`` could clash with (libcst
        ``ScopeProvider``): every name bound or read in that scope or in a scope nested
        in it (a closure reading a global would see the new local instead), and every
        name bound in an enclosing scope (no shadowing)."""
        if self._scopes is None:
            self._scopes = self.wrapper.resolve(ScopeProvider)
        scope = self._scopes.get(node)
        if scope is None:
            raise CstError("the region has no scope")
        taken: set[str] = set()
        seen = set()
        for other in self._scopes.values():
            if other is None or id(other) in seen:
                continue
            seen.add(id(other))
            s = other
            while True:
                if s is scope:
                    taken.update(a.name for a in other.assignments)
                    taken.update(a.node.value for a in other.accesses if isinstance(a.node, cst.Name))
                    break
                if s.parent is s:
                    break
                s = s.parent
        s = scope
        while s.parent is not s:
            s = s.parent
            taken.update(a.name for a in s.assignments)
        return taken


# ---------------------------------------------------------------------------
# operations and the transformer


@dataclass
class Ops:
    """The structural operations one fix makes (see the module docstring)."""

    file: CstFile
    inserts: dict = field(default_factory=dict)  # statement -> [statements]
    one_line: dict = field(default_factory=dict)  # With -> [statements]
    as_names: dict = field(default_factory=dict)  # WithItem -> name
    binds: dict = field(default_factory=dict)  # Expr (small statement) -> name
    replaces: dict = field(default_factory=dict)  # expression -> expression
    imports: list = field(default_factory=list)  # ImportItem
    replace_text: dict = field(default_factory=dict)  # expression -> its new text, as written in the file

    def _parse_statements(self, code: str, indent: str) -> list:
        config = self.file.config
        code = _dedent(code, indent)
        try:
            return list(cst.parse_module(code if code.endswith("\n") else code + "\n", config=config).body)
        except Exception as exc:  # libcst.ParserSyntaxError and its internal errors
            raise CstError(f"the inserted code does not parse ({type(exc).__name__})") from None

    def insert_before(self, stmt, code: str, indent: str = "") -> None:
        """``code`` (continuation lines written at ``indent``, the statement's own
        indentation: libcst adds the block's indentation back) right above ``stmt``."""
        self.inserts.setdefault(stmt, []).extend(self._parse_statements(code, indent))

    def hoist_one_line(self, with_node, code: str, indent: str = "") -> None:
        if not isinstance(with_node.body, cst.SimpleStatementSuite):
            raise CstError("the region's body is not on its header's line")
        self.one_line.setdefault(with_node, []).extend(self._parse_statements(code, indent))

    def as_name(self, expr, name: str) -> None:
        item = self.file.with_item_of(expr)
        if item.asname is not None:
            raise CstError("the mode is already bound")
        self.as_names[item] = name

    def bind(self, stmt, name: str) -> None:
        if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(stmt.body[0], cst.Expr):
            raise CstError("the statement that enters the mode is not an expression statement")
        self.binds[stmt.body[0]] = name

    def replace(self, node, code: str) -> None:
        """``node`` becomes the expression ``code``; its continuation lines are written at
        their place in the file (the indentation of the statement that holds ``node``
        is taken off them: libcst adds it back)."""
        self.replace_text[node] = code
        if "\n" in code:
            line = self.file.positions[self.file.statement_at(_start(self.file.positions[node]))].start.line
            text_line = self.file.text.split("\n", line)[line - 1]
            code = _dedent(code, text_line[: len(text_line) - len(text_line.lstrip(" \t"))])
        try:
            new = cst.parse_expression(code, config=self.file.config)
        except Exception as exc:  # libcst.ParserSyntaxError and its internal errors
            raise CstError(f"the new expression does not parse ({type(exc).__name__})") from None
        if getattr(node, "lpar", None) and hasattr(new, "lpar") and not new.lpar:
            new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
        self.replaces[node] = new

    def add_import(self, module: str, obj: str | None = None) -> None:
        from libcst.codemod.visitors import ImportItem

        self.imports.append(ImportItem(module, obj))

    def transformed(self) -> cst.Module:
        module = self.file.module.visit(_Apply(self))
        if self.imports:
            from libcst.codemod import CodemodContext
            from libcst.codemod.visitors import AddImportsVisitor

            module = module.visit(AddImportsVisitor(CodemodContext(), self.imports))
        return module

    def edits(self) -> tuple[Edit, ...]:
        """The edits that turn the file into the transformed module. The statements,
        names and imports come from :func:`diff_edits` of the module transformed without
        the replaced expressions; each replaced expression is one edit of its range (as a
        reader and ``fix.edits`` expect). Checked: applied, they give the transformed
        module exactly; otherwise the whole diff is used."""
        from fakegrad_lint.fix.apply import EditError, apply_edits

        old = self.file.text
        full = self.transformed().code
        if self.replaces:
            structure = Ops(self.file, self.inserts, self.one_line, self.as_names, self.binds, {}, self.imports)
            edits = diff_edits(old, structure.transformed().code) + [
                Edit(Location(*_start(r)), Location(r.end.line, r.end.column), self.replace_text[n])
                for n, r in ((n, self.file.positions[n]) for n in self.replaces)]
            edits.sort(key=lambda e: (e.start, e.end))
            try:
                if apply_edits(old, edits) == full:
                    return tuple(edits)
            except EditError:
                pass
        return self._diffed(old, full)

    def _diffed(self, old: str, full: str) -> tuple[Edit, ...]:
        """:func:`diff_edits`, with the pieces of one replaced expression joined."""
        raw = diff_edits(old, full)
        spans = sorted(
            (Location(*_start(r)), Location(r.end.line, r.end.column))
            for r in (self.file.positions[n] for n in self.replaces))
        outer: list = []
        for span in spans:
            if outer and span[0] >= outer[-1][0] and span[1] <= outer[-1][1]:
                continue  # inside a replaced expression already
            outer.append(span)
        starts = [0] + [m.end() for m in re.finditer("\n", old)]

        def offset(loc: Location) -> int:
            return starts[loc.row - 1] + loc.column

        out: list[Edit] = []
        for span in outer:
            group = [e for e in raw if span[0] <= e.start and e.end <= span[1]]
            if len(group) < 2:
                continue
            begin, end = offset(span[0]), offset(span[1])
            pieces, at = [], begin
            for e in group:
                pieces.append(old[at:offset(e.start)])
                pieces.append(e.content)
                at = offset(e.end)
            pieces.append(old[at:end])
            raw = [e for e in raw if e not in group]
            out.append(Edit(span[0], span[1], "".join(pieces)))
        return tuple(sorted(raw + out, key=lambda e: (e.start, e.end)))


def _start(rng) -> tuple[int, int]:
    return rng.start.line, rng.start.column


def _dedent(code: str, indent: str) -> str:
    if not indent or "\n" not in code:
        return code
    first, *rest = code.split("\n")
    return "\n".join([first] + [line[len(indent):] if line.startswith(indent) else line for line in rest])


def _split_leading(lines):
    """``leading_lines`` of a statement that gets statements inserted above it: what
    stays with it (the comments right above it) and what moves to the first inserted
    statement (blank lines and anything above them)."""
    keep = len(lines)
    while keep > 0 and lines[keep - 1].comment is not None:
        keep -= 1
    return list(lines[:keep]), list(lines[keep:])


class _Apply(cst.CSTTransformer):
    def __init__(self, ops: Ops):
        super().__init__()
        self.ops = ops

    def _block(self, original_body, updated_body):
        out = []
        for orig, upd in zip(original_body, updated_body):
            new = self.ops.inserts.get(orig)
            if new:
                moved, kept = _split_leading(upd.leading_lines)
                new = list(new)
                new[0] = new[0].with_changes(leading_lines=[*moved, *new[0].leading_lines])
                upd = upd.with_changes(leading_lines=kept)
                out.extend(new)
            out.append(upd)
        return out

    def leave_IndentedBlock(self, original_node, updated_node):
        if any(s in self.ops.inserts for s in original_node.body):
            return updated_node.with_changes(body=self._block(original_node.body, updated_node.body))
        return updated_node

    def leave_Module(self, original_node, updated_node):
        if any(s in self.ops.inserts for s in original_node.body):
            return updated_node.with_changes(body=self._block(original_node.body, updated_node.body))
        return updated_node

    def leave_With(self, original_node, updated_node):
        new = self.ops.one_line.get(original_node)
        if new:
            suite = updated_node.body
            line = cst.SimpleStatementLine(body=suite.body, trailing_whitespace=suite.trailing_whitespace)
            block = cst.IndentedBlock(body=[*new, line])
            return updated_node.with_changes(body=block, whitespace_before_colon=updated_node.whitespace_before_colon)
        return updated_node

    def leave_WithItem(self, original_node, updated_node):
        name = self.ops.as_names.get(original_node)
        if name is not None:
            return updated_node.with_changes(asname=cst.AsName(name=cst.Name(name)))
        return updated_node

    def leave_Expr(self, original_node, updated_node):
        name = self.ops.binds.get(original_node)
        if name is not None:
            return cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))], value=updated_node.value,
                              semicolon=updated_node.semicolon)
        return updated_node

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        new = self.ops.replaces.get(original_node)
        return new if new is not None else updated


# ---------------------------------------------------------------------------
# original vs transformed -> minimal edits


_TOKEN = re.compile(r"\w+|[^\S\n]+|\n|.")


def diff_edits(old: str, new: str) -> list[Edit]:
    """Minimal edits that turn ``old`` into ``new`` (both with ``\\n`` line ends): whole
    lines where lines were inserted or deleted, and inside changed lines the tokens
    (words, runs of blanks, single characters) that differ, so an edit never cuts a
    word and two fixes that touch the same line at different places do not overlap."""
    a, b = _LINE.findall(old), _LINE.findall(new)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace":
            out.append(Edit(_line_start(a, i1), _line_start(a, i2), "".join(b[j1:j2])))
            continue
        out.extend(_token_edits(i1, "".join(a[i1:i2]), "".join(b[j1:j2])))
    return [piece for e in out for piece in _split_insertion(_at_line_start(e, a), a)]


def _split_insertion(edit: Edit, lines: list[str]) -> list[Edit]:
    """An insertion at the first token of a line whose text starts with whole new
    statements (``"x_fake = ...\\n    "`` + the rest): those statements become whole new
    lines above the line, the rest stays an insertion at the token."""
    if edit.start != edit.end or "\n" not in edit.content or edit.start.row > len(lines):
        return [edit]
    line = lines[edit.start.row - 1]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if edit.start.column != len(indent):
        return [edit]
    best = None
    for m in re.finditer("\n" + re.escape(indent) + r"(?=\S|\Z)", edit.content):
        if _is_code(edit.content[: m.start()]):
            best = m
    if best is None:
        return [edit]
    at = Location(edit.start.row, 0)
    out = [Edit(at, at, indent + edit.content[: best.start()] + "\n")]
    if best.end() < len(edit.content):
        out.append(Edit(edit.start, edit.end, edit.content[best.end():]))
    return out


def _is_code(text: str) -> bool:
    import ast
    import textwrap

    try:
        ast.parse(textwrap.dedent(text) if text[:1] in " \t" else text)
    except (SyntaxError, ValueError):
        return False
    return bool(text.strip())


def _at_line_start(edit: Edit, lines: list[str]) -> Edit:
    """An insertion of ``"\\nXYZ"`` at the end of a line is the insertion of ``"XYZ\\n"``
    at the start of the next one: written that way (whole new lines, as a reader expects)."""
    if edit.start != edit.end or not edit.content.startswith("\n") or edit.start.row > len(lines):
        return edit
    line = lines[edit.start.row - 1]
    if not line.endswith("\n") or edit.start.column != len(line) - 1:
        return edit
    at = Location(edit.start.row + 1, 0)
    return Edit(at, at, edit.content[1:] + "\n")


def _token_edits(row0: int, before: str, after: str) -> list[Edit]:
    """Edits of the tokens that differ between ``before`` (starting at 0-based line
    ``row0``) and ``after``."""
    ta, tb = _TOKEN.findall(before), _TOKEN.findall(after)
    row_col = [(row0 + 1, 0)]
    for tok in ta:
        row_col.append(_advance(*row_col[-1], tok))
    out: list[Edit] = []
    last_k2 = None
    for op, k1, k2, m1, m2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if out and last_k2 == k1 - 1 and not ta[k1 - 1].strip():
            # two pieces a single blank apart: one edit (`x_fake = ...` is not cut at its blank)
            prev = out.pop()
            out.append(Edit(prev.start, Location(*row_col[k2]), prev.content + ta[k1 - 1] + "".join(tb[m1:m2])))
        else:
            out.append(Edit(Location(*row_col[k1]), Location(*row_col[k2]), "".join(tb[m1:m2])))
        last_k2 = k2
    return out


def _line_start(lines: list[str], index: int) -> Location:
    """Where line ``index`` (0-based) starts; past a last line without a newline, its end."""
    if index == len(lines) and lines and not lines[-1].endswith("\n"):
        return Location(len(lines), len(lines[-1]))
    return Location(index + 1, 0)


_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def _advance(row: int, col: int, text: str) -> tuple[int, int]:
    if text == "\n":
        return row + 1, 0
    newlines = text.count("\n")
    if not newlines:
        return row, col + len(text)
    return row + newlines, len(text) - text.rfind("\n") - 1
