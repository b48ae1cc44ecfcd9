"""The cheap branch states of issue 13 (perf8) give the answers of the code they replace.

- ``statements._join_names`` (the names after an unknown ``if``) finds the names whose
  value differs by C-level passes instead of a Python loop over every name: the same
  dict, the same values (joined, not equal: identical objects), in the same order;
- ``heap._split_items`` (a list changed on some paths: the items on every path, then
  those on some only) keeps to Python only the items some paths lack, and gives what
  the item-by-item walk (``heap._split_items_reference``) gives;
- ``state.State.child`` makes the state ``State(scope)`` and the old field copies made,
  and an empty context is shared (contexts are immutable).

Inputs are built to reach every branch (items twice on a path, on every path or none,
a path that is the first's very tuple, names bound on one branch only), so a fast path
that answers differently fails here, not as a lost finding somewhere else.
"""

from __future__ import annotations

import random

from fakegrad_lint.analysis import heap
from fakegrad_lint.analysis import values as V
from fakegrad_lint.analysis.state import Scope, State
from fakegrad_lint.analysis.statements import _join_names


def _reference_join(merged, other):
    """The loop ``exec_if`` ran before (every name of ``other``, in its order)."""
    for k, b in other.items():
        a = merged.get(k)
        if a is not b:
            merged[k] = b if a is None else V.join(a, b)
    return merged


def _namespaces(rng):
    pool = [V.ConstVal(i) for i in range(4)] + [V.TVal(), V.UNKNOWN, V.ConstVal("x")]
    names = [f"n{i}" for i in range(12)]
    before = {n: rng.choice(pool) for n in rng.sample(names, rng.randint(0, 8))}
    body, other = dict(before), dict(before)
    for d in (body, other):
        for n in rng.sample(names, rng.randint(0, 5)):
            d[n] = rng.choice(pool)  # rebound (maybe to the very same value) or bound anew
    return body, other


def test_join_names_is_the_loop_it_replaces():
    rng = random.Random(13)
    for _ in range(3000):
        body, other = _namespaces(rng)
        a, b = dict(body), dict(body)
        got = _join_names(a, other)
        want = _reference_join(b, other)
        assert got is a
        assert list(got) == list(want)  # same names, same order
        for k in want:
            x, y = got[k], want[k]
            if isinstance(y, V.MaybeVal):  # a join made anew on each side: same options
                assert isinstance(x, V.MaybeVal) and len(x.options) == len(y.options)
                assert all(p is q for p, q in zip(x.options, y.options))
            else:
                assert x is y, k


def _item_paths(rng):
    pool = [V.TVal() for _ in range(6)] + [V.ConstVal(i) for i in range(3)]
    base = tuple(rng.sample(pool, rng.randint(0, 5)))
    if rng.random() < 0.2 and base:
        base = base + (base[0],)  # an item twice on a path
    paths = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.25:
            paths.append(base)  # the very tuple of the first path
        elif r < 0.5:
            paths.append(base + tuple(rng.sample(pool, rng.randint(1, 3))))  # appended to
        elif r < 0.75:
            paths.append(tuple(x for x in base if rng.random() < 0.7))  # some removed
        else:
            paths.append(tuple(rng.sample(pool, rng.randint(0, 6))))
    return paths


def test_split_items_is_the_walk_it_replaces():
    rng = random.Random(7)
    seen_branches = set()
    for _ in range(5000):
        paths = _item_paths(rng)
        got = heap._split_items(paths)
        want = heap._split_items_reference(paths)
        assert [id(x) for x in got[0]] == [id(x) for x in want[0]]
        assert [id(x) for x in got[1]] == [id(x) for x in want[1]]
        ids0 = [id(x) for x in paths[0]]
        common = set(ids0).intersection(*({id(x) for x in p} for p in paths[1:]))
        seen_branches.add("all" if len(common) == len(ids0) else "unique" if len(set(ids0)) == len(ids0) else "twice")
    assert seen_branches == {"all", "unique", "twice"}


def test_registry_merge_after_an_unknown_if():
    """End to end: a list appended to in one branch of an unknown ``if`` holds the old
    items certainly and the new one as a may value, as before."""
    reg = V.SeqVal((V.TVal(), V.TVal()))
    old = reg.items
    new_item = V.TVal()
    with heap.Branch() as body:
        heap.heap_field(reg, "items", old + (new_item,))
        heap.heap_field(reg, "elts", None)
    with heap.Branch() as other:
        pass
    heap.merge([body.changes, other.changes])
    assert reg.items[:2] == old and reg.items[0] is old[0] and reg.items[1] is old[1]
    assert len(reg.items) == 3 and isinstance(reg.items[2], V.MaybeVal)
    assert any(o is new_item for o in reg.items[2].options)


def test_child_state_is_what_state_and_copies_made():
    parent = State(Scope())
    parent.depth, parent.stack, parent.sites = 2, ("f",), ("site",)
    parent.ctx = parent.ctx.but(grad_enabled=False)
    scope = Scope(parent=parent.scope)
    c = parent.child(scope)
    ref = State(scope)
    ref.ctx, ref.depth, ref.stack, ref.sites = parent.ctx, parent.depth + 1, parent.stack, parent.sites
    for slot in State.__slots__:
        a, b = getattr(c, slot), getattr(ref, slot)
        assert a == b if isinstance(b, list) else a is b, slot
    assert c.returns is not parent.returns
    assert State(Scope()).ctx is State(Scope()).ctx  # one shared empty context
