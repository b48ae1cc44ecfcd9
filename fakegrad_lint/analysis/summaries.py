"""Per-module facts, computed once per module content and shared by every analysis
of the process.

A project module imported by many linted files is parsed once
(:func:`fakegrad_lint.analysis.roots.load`, keyed by path, modification time and
size; function bodies parsed on first use), and what the analysis reads of its
text is kept with it here (:func:`summarize`): whether a name occurs again in the
module (its import can then be bound lazily), the text of a def, the words it
names and the names it calls, whether it can make a real requires-grad value.
Facts of single AST nodes (is a def a generator, does a loop switch requires_grad)
are kept with the node in :mod:`.code_text`.

What running the module's body *binds* is not shared between linted files: it
depends on the importing analysis (its call depth and step budget when the import
runs, the names bound lazily to that analysis, the project modules it has already
loaded), and the values are mutable (a module frozen by one file's code would stay
frozen for the next), so a shared namespace would change results. The body runs
once per linted file that imports it, and only up to the names that file uses.
"""

from __future__ import annotations

from fakegrad_lint.analysis.code_text import _WORD_RE, _called_names, _makes_real_values, _word_count


class ModuleSummary:
    """The text facts of one module (its source and lines), each computed on first use."""

    __slots__ = ("source", "lines", "_again", "_nodes")

    def __init__(self, source: str, lines: list):
        self.source, self.lines = source, lines
        self._again: dict = {}  # name -> does it occur twice or more (as a whole word)
        self._nodes: dict = {}  # def node -> [text, words, called names, makes real values]

    def used_again(self, name: str) -> bool:
        """Does ``name`` occur at least twice in the module, as a whole word?"""
        hit = self._again.get(name)
        if hit is None:
            hit = self._again[name] = _word_count(self.source, name, 2) >= 2
        return hit

    def _facts(self, node) -> list:
        facts = self._nodes.get(node)
        if facts is None:
            facts = self._nodes[node] = ["\n".join(self.lines[node.lineno - 1 : node.end_lineno]), None, None, None]
        return facts

    def text(self, node) -> str:
        """The lines of ``node`` (a def or class), joined."""
        return self._facts(node)[0]

    def words(self, node) -> set:
        """The words the text of ``node`` names (``code_text._WORD_RE``)."""
        facts = self._facts(node)
        if facts[1] is None:
            facts[1] = set(_WORD_RE.findall(facts[0]))
        return facts[1]

    def calls(self, node) -> set:
        """The names the text of ``node`` calls (``code_text._called_names``)."""
        facts = self._facts(node)
        if facts[2] is None:
            facts[2] = _called_names(facts[0])
        return facts[2]

    def makes_real_values(self, node) -> bool:
        facts = self._facts(node)
        if facts[3] is None:
            facts[3] = _makes_real_values(facts[0])
        return facts[3]


def summarize(mf) -> ModuleSummary:
    """The summary of a project module (a :class:`~fakegrad_lint.analysis.roots.ModuleFile`),
    made once and kept with it."""
    summary = mf.summary
    if summary is None:
        summary = mf.summary = ModuleSummary(mf.source, mf.pos.lines)
    return summary
