"""Cheap questions about code, by its text or its AST shape, never by running it:
what a unit names and calls (``_called_names``, ``_hot_in_code``), whether it is a
generator, where a def is written, whether a name is free in it. They decide what
is worth interpreting; a superset is always safe (it costs time, never a finding).
"""

from __future__ import annotations

import ast
import builtins
import re
import weakref

from fakegrad_lint.analysis.names import dotted_name
from fakegrad_lint.analysis.torch_tables import ENTRY_WORDS
from fakegrad_lint.sources.lazyparse import LAZY_DEF_TYPES

_BUILTINS = frozenset(dir(builtins))


_ENTRY_RE = re.compile("|".join(ENTRY_WORDS))


# facts of one AST node, kept as long as the node lives: the trees of imported project
# modules are shared by every analysis of the process (analysis/roots.load)
_YIELDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # def node -> is a generator
_LOOP_SETS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # For node -> {name: sets requires_grad}


def _contains_yield(fn, lines):
    hit = _YIELDS.get(fn)
    if hit is None:
        hit = _YIELDS[fn] = "yield" in "\n".join(lines[fn.lineno - 1 : fn.end_lineno]) and any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn))
    return hit


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


# with the function definitions whose bodies are parsed on first use (fakegrad_lint.sources.lazyparse)
_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, *LAZY_DEF_TYPES)


def _defined_in(func, with_node) -> bool:
    """Is ``func`` (a lambda or def) written inside the block of ``with_node``?"""
    body = getattr(with_node, "body", None) or []
    if func is None or not body or not hasattr(func, "lineno"):
        return False
    return body[0].lineno <= func.lineno and func.end_lineno <= body[-1].end_lineno


def _free_in(expr, func) -> bool:
    """Is the root name of ``expr`` free in ``func`` (not a parameter, not assigned,
    not declared global in it)? Then it is read from the block's scope."""
    root = expr
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    a = func.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}
    if root.id in params:
        return False
    body = func.body if isinstance(func.body, list) else [func.body]
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == root.id and not isinstance(node.ctx, ast.Load):
                return False
            if isinstance(node, (ast.Global, ast.Nonlocal)) and root.id in node.names:
                return False
    return True


_SOURCE_RE = re.compile(r"requires_grad|Parameter|parameters\(|\bnn\.|Module\b|torch\.nn|backward|autograd")


_CALL_RE = re.compile(r"\b(\w+)\s*\(")


_WORD_RE = re.compile(r"\b[A-Za-z_]\w*\b")


_TYPE_TESTS = frozenset({"isinstance", "issubclass"})


def _hot_in_code(node, text, hot_re):
    """Does a hot word of ``text`` (the unit's lines, from its first decorator) occur
    where running the unit can open a region with it? Annotations are never
    evaluated (nor by this interpreter), docstrings and comments are not code, and
    the class of a type test (``isinstance(m, FakeTensorMode)``) is only compared: a
    unit that names a fake mode only there (``fake_mode: FakeTensorMode | None``)
    cannot open a region by itself, so it is analysed on its own only when it calls
    one that can.
    The signature's annotations are checked first, so that a unit that names a
    fake mode only there does not need its body (parsed on first use)."""
    import bisect

    first = min([node.lineno] + [dec.lineno for dec in node.decorator_list])
    lines = text.split("\n")
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    hits = []  # (line, start col, end col) of the matches in code, columns in UTF-8 bytes
    for m in hot_re.finditer(text):
        i = bisect.bisect_right(starts, m.start()) - 1
        line = lines[i]
        col = m.start() - starts[i]
        prefix = line[:col]
        h = prefix.find("#")
        if h >= 0 and not any(q in prefix[:h] for q in ("'", '"')):
            continue  # in a comment
        bcol = len(prefix.encode("utf-8")) if not prefix.isascii() else col
        hits.append((first + i, bcol, bcol + len(m.group().encode("utf-8"))))

    def outside(hits, spans):
        return [
            (ln, c0, c1)
            for ln, c0, c1 in hits
            if not any((sl, sc) <= (ln, c0) and (ln, c1) <= (el, ec) for sl, sc, el, ec in spans)
        ]

    def span(a):
        return (a.lineno, a.col_offset, a.end_lineno, a.end_col_offset)

    args = node.args
    header = [span(x.annotation) for x in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
              if x is not None and x.annotation is not None]
    if node.returns is not None:
        header.append(span(node.returns))
    hits = outside(hits, header)
    if not hits:
        return False
    # the body too (annotations of locals and nested defs, docstrings, type tests): a
    # hit is left out when a node that holds it excludes it; only the nodes whose lines
    # hold the hit are visited (a walk of the whole unit costs more than the analysis
    # of most units)
    return any(not _excluded(node, hit) for hit in hits)


def _excluded_span(n):
    """The part of node ``n`` that opens no region: an annotation, a docstring, the
    class of a type test (or None)."""
    t = type(n)
    if t is ast.arg or t is ast.AnnAssign:
        return n.annotation
    if t in _FUNCTION_DEFS:
        return n.returns
    if t is ast.Expr and type(n.value) is ast.Constant and isinstance(n.value.value, str):
        return n.value
    if t is ast.Call and type(n.func) is ast.Name and n.func.id in _TYPE_TESTS and len(n.args) == 2:
        return n.args[1]  # `isinstance(m, FakeTensorMode)`: a type test opens no region
    return None


_DEF_LIKE = (*_FUNCTION_DEFS, ast.ClassDef)


def _excluded(node, hit) -> bool:
    """Is ``hit`` (line, start, end) inside the excluded span of a node of ``node``'s
    tree (what ``ast.walk`` reaches)? Children whose lines cannot hold the hit are
    not visited: a node's span holds its children's (a def's and a class's from their
    first decorator); nodes without a position, and f-strings (whose parts' positions
    are not always their own), are always entered."""
    ln, c0, c1 = hit

    def holds(a):
        return a is not None and (a.lineno, a.col_offset) <= (ln, c0) and (ln, c1) <= (a.end_lineno, a.end_col_offset)

    todo = [node]
    pop, push = todo.pop, todo.append
    while todo:
        n = pop()
        if type(n) is ast.JoinedStr:
            if any(holds(_excluded_span(m)) for m in ast.walk(n)):
                return True
            continue
        if holds(_excluded_span(n)):
            return True
        for child in ast.iter_child_nodes(n):
            first = getattr(child, "lineno", None)
            if first is None:
                push(child)
                continue
            if isinstance(child, _DEF_LIKE) and child.decorator_list:
                first = min(first, *(d.lineno for d in child.decorator_list))
            if first <= ln <= child.end_lineno:
                push(child)
    return False


def _is_word_char(c):
    return c.isalnum() or c == "_"  # what ``\w`` matches in a str pattern


def _word_starts(text, word):
    """Where ``word`` stands in ``text`` as a whole word (``\bword\b``), by ``str.find``:
    a regex alternation with word boundaries is slow on large texts."""
    i, size, n = text.find(word), len(word), len(text)
    while i >= 0:
        if (i == 0 or not _is_word_char(text[i - 1])) and (i + size >= n or not _is_word_char(text[i + size])):
            yield i
        i = text.find(word, i + 1)


def _names_a_word(text, words):
    """Does ``text`` hold one of ``words`` as a whole word?"""
    return any(next(_word_starts(text, w), None) is not None for w in words)


_REVERSED_CALL_RE = re.compile(r"\(\s*(\w+)")


def _call_sites(text):
    """``(word start, paren index, name)`` of each ``name(`` in ``text`` (a name,
    optional whitespace, an opening parenthesis): what ``_CALL_RE`` finds, found from
    the parentheses backwards (one regex pass over the reversed text: the word before
    a parenthesis is the longest run of word characters after it there)."""
    n = len(text)
    out = [(n - m.end(1), n - 1 - m.start(), text[n - m.end(1) : n - m.start(1)])
           for m in _REVERSED_CALL_RE.finditer(text[::-1])]
    out.reverse()
    return out


def _called_names(text):
    """Names a function's text calls, ``f(...)`` and ``self.f(...)`` (a superset is fine:
    it only decides what is worth analysing)."""
    return {name for _start, _paren, name in _call_sites(text)}


def _makes_real_values(text):
    """Can this text make a real requires-grad value (``_SOURCE_RE``, by ``str.find``)?"""
    if any(w in text for w in _SOURCE_WORDS):
        return True
    i = text.find("nn.")
    while i >= 0:  # \bnn\.
        if i == 0 or not _is_word_char(text[i - 1]):
            return True
        i = text.find("nn.", i + 1)
    i = text.find("Module")
    while i >= 0:  # Module\b
        if i + 6 >= len(text) or not _is_word_char(text[i + 6]):
            return True
        i = text.find("Module", i + 1)
    return False


_SOURCE_WORDS = ("requires_grad", "Parameter", "parameters(", "torch.nn", "backward", "autograd")


def _constant_subscripts(node):
    """``a.b[0]["k"]``: names and constant indexes only (the same object each time)."""
    while isinstance(node, ast.Subscript):
        if not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return dotted_name(node) is not None


def _sets_requires_grad(loop, name):
    """Does the body of ``loop`` (a ``for``) switch ``name``'s requires_grad on?"""
    names = _LOOP_SETS.get(loop)
    if names is None:
        names = _LOOP_SETS[loop] = {}
    hit = names.get(name)
    if hit is None:
        hit = names[name] = _body_sets_requires_grad(loop.body, name)
    return hit


def _body_sets_requires_grad(body, name):
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "requires_grad_":
            if isinstance(n.func.value, ast.Name) and n.func.value.id == name:
                return True
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Attribute) and t.attr == "requires_grad" and isinstance(t.value, ast.Name) and t.value.id == name:
                    return True
    return False


def _word_count(text, word, limit):
    """Occurrences of ``word`` as a whole word in ``text``, counting up to ``limit``
    (``str.find``: a regex with word boundaries is slow on large texts)."""
    n, i, size = 0, text.find(word), len(word)
    while i >= 0 and n < limit:
        before = text[i - 1] if i else " "
        after = text[i + size] if i + size < len(text) else " "
        if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
            n += 1
        i = text.find(word, i + 1)
    return n


def _is_main_guard(test):
    """``__name__ == "__main__"``"""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )
