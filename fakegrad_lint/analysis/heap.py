"""Object state joined at branch merges, as names are: the may-lattice of the heap.

An ``if`` whose test is unknown runs both branches. Names are joined from two copies
of the scope; objects (an instance's attributes, a module's parameters switched off,
a mode's ``allow_non_fake_inputs``, a list appended to) are shared by every name that
holds them, so each write to them goes through :func:`heap_set` / :func:`heap_field`,
which record the old value in the active journal. After a branch its writes are
undone (the next branch starts from the state before the ``if``); after the last,
each written slot gets the join of what every path left there:

- an attribute: :func:`~fakegrad_lint.analysis.values.join` of the values (set on one
  path only: reading it on the other raises, so the value read is that path's, unless
  a class attribute or ``__getattr__`` answers there too);
- ``Origin.disabled`` (requires_grad switched off) and ``grad_real`` (it holds a real
  ``.grad``): None, "maybe", when the paths differ (a maybe-frozen value's leaks are
  may links); ``frozen``: what every path froze;
- a mode's ``allow``: None (unknown) when the paths differ;
- a container's contents: the items of every path, those present on some paths only
  as may values; known keys and elements only when every path agrees;
- a module's ``mode`` (made fake on one path): fake on some paths (``may_fake``).

A fact true on every joined path stays certain; one true on some is a may value and
never reports. Pure data: nothing here walks the AST.
"""

from __future__ import annotations

from itertools import compress

from fakegrad_lint.analysis.values import UNKNOWN, ClassVal, InstanceVal, ModeVal, ModuleVal, Origin, SeqVal, join

_MISSING = object()
# the journal of the innermost branch being run (None: no branch is being joined)
JOURNAL: list = [None]

_SEQ_FIELDS = ("items", "elts", "keys", "is_dict")
_SEQ_KEYS = tuple((f, ("<field>", f)) for f in _SEQ_FIELDS)  # (field, its journal key)


def heap_set(owner, key, value):
    """``owner.attrs[key] = value``, journaled."""
    d = owner.attrs
    j = JOURNAL[0]
    if j is not None:
        j.append((owner, key, d.get(key, _MISSING)))
    d[key] = value


def heap_field(obj, name, value):
    """``obj.name = value`` for a field of an object (frozen dataclasses too), journaled."""
    j = JOURNAL[0]
    if j is not None:
        j.append((obj, ("<field>", name), getattr(obj, name)))
    object.__setattr__(obj, name, value)


class Branch:
    """``with Branch() as b:`` runs one path with its own journal; ``b.changes`` are the
    slots it wrote, (owner, key) -> (old, new), and the writes are undone on exit."""

    def __enter__(self):
        self.outer = JOURNAL[0]
        self.entries = JOURNAL[0] = []
        self.changes = {}
        return self

    def __exit__(self, exc_type, exc, tb):
        JOURNAL[0] = self.outer
        if exc_type is not None:
            # the path ends here (a helper paused at its `yield`, the analysis stopped):
            # its writes stay, as without a join (the enclosing branch still sees them)
            if self.outer is not None:
                self.outer.extend(self.entries)
            return False
        changes = {}
        entries = self.entries
        if not entries:  # (most branches write no object)
            self.changes = changes
            return False
        for owner, key, old in entries:
            k = (id(owner), key)
            if k not in changes:
                changes[k] = [owner, key, old, None]
        for c in changes.values():
            c[3] = _read(c[0], c[1])
        # undone last write first: the slot gets the value it had before the branch
        for owner, key, old in reversed(entries):
            _write(owner, key, old)
        self.changes = changes
        return False


def _read(owner, key):
    if isinstance(key, tuple) and key[:1] == ("<field>",):
        return getattr(owner, key[1])
    return owner.attrs.get(key, _MISSING)


def _write(owner, key, value):
    if isinstance(key, tuple) and key[:1] == ("<field>",):
        object.__setattr__(owner, key[1], value)
    elif value is _MISSING:
        owner.attrs.pop(key, None)
    else:
        owner.attrs[key] = value


def merge(paths):
    """After the branches: each slot any path wrote gets the join over all ``paths``
    (a path that did not write it left the value it had before)."""
    slots = {}
    for changes in paths:
        for k, (owner, key, old, _new) in changes.items():
            slots.setdefault(k, (owner, key, old))
    seqs = {}
    for k, (owner, key, old) in slots.items():
        values = [changes[k][3] if k in changes else old for changes in paths]
        if isinstance(owner, SeqVal) and isinstance(key, tuple):
            seqs.setdefault(id(owner), owner)
            continue
        merged = _merge_slot(owner, key, old, values)
        if merged is not _SAME:
            (heap_field(owner, key[1], merged) if isinstance(key, tuple) and key[:1] == ("<field>",)
             else _set_or_drop(owner, key, merged))
    for seq in seqs.values():
        _merge_seq(seq, slots, paths)


_SAME = object()


def _set_or_drop(owner, key, value):
    if value is _MISSING:
        if key in owner.attrs:
            j = JOURNAL[0]
            if j is not None:
                j.append((owner, key, owner.attrs[key]))
            del owner.attrs[key]
    else:
        heap_set(owner, key, value)


def _merge_slot(owner, key, old, values):
    first = values[0]
    if all(v is first for v in values[1:]):
        return first if first is not _read(owner, key) else _SAME
    if isinstance(key, tuple) and key[:1] == ("<field>",):
        name = key[1]
        if isinstance(owner, Origin):
            if name in ("disabled", "grad_real", "fake_grad"):
                return None  # switched off (or given a real .grad) on some paths only: maybe
            if name == "frozen":
                common = set(values[0])
                for v in values[1:]:
                    common &= set(v)
                return common
            return values[0]
        if isinstance(owner, ModeVal) and name == "allow":
            return None  # what it allows depends on the path
        if isinstance(owner, ModuleVal):
            if name == "mode":
                modes = [v for v in values if v is not None]
                if len({id(m) for m in modes}) == 1 and len(modes) == len(values):
                    return modes[0]
                if modes:
                    object.__setattr__(owner, "may_fake", True)  # fake on some paths only
                    return modes[0]
                return None
            if name in ("may_fake", "meta"):
                return any(bool(v) for v in values)
            if name == "fake_out":
                return all(bool(v) for v in values)
            if name == "origin":
                origins = [v for v in values if v is not None]
                if origins:
                    origins[0].disabled = None  # real on some paths only: its leaks are may links
                    return origins[0]
                return None
        return values[0]
    present = [v for v in values if v is not _MISSING]
    if len(present) < len(values) and not _falls_back(owner, key):
        values = present  # (read on a path that did not set it: an AttributeError there)
    out = None
    for v in values:
        v = UNKNOWN if v is _MISSING else v
        out = v if out is None else join(out, v)
    return out


def _falls_back(owner, key):
    """Does reading ``owner.key`` find something when the object's own attribute is unset
    (a class attribute, ``__getattr__``, a torch module's own parameters)?"""
    if isinstance(owner, ClassVal):
        return any(key in c.attrs for c in owner.mro[1:])
    cls = getattr(owner, "cls", None)
    if isinstance(owner, ModuleVal) and (cls is None or not isinstance(key, str) or key.startswith("<")):
        return True
    if isinstance(cls, ClassVal):
        return cls.lookup_attr(key) is not None or cls.methods.get(key) is not None \
            or cls.lookup_method("__getattr__") is not None or cls.library is not None
    return not isinstance(owner, InstanceVal)


def _merge_seq(seq, slots, paths):
    """A list or dict changed on some paths: the items of every path (those not on all
    of them as may values), its keys and elements only where every path agrees."""
    sid = id(seq)
    # each field's value before the branches (what a path that did not write it left)
    fields = []
    for f, fk in _SEQ_KEYS:
        k = (sid, fk)
        fields.append((f, k, slots[k][2] if k in slots else getattr(seq, f)))
    states = []
    for changes in paths:
        state = {}
        for f, k, old in fields:
            c = changes.get(k)
            state[f] = old if c is None else c[3]
        states.append(state)
    first = states[0]
    if all(all(s[f] is first[f] or s[f] == first[f] for f in _SEQ_FIELDS) for s in states[1:]):
        for f in _SEQ_FIELDS:
            heap_field(seq, f, first[f])
        return
    if all(s["keys"] is not None and s["elts"] is not None and set(s["keys"]) == set(first["keys"]) for s in states):
        keys = tuple(first["keys"])
        # each path's first index of each key (what `keys.index(key)` gives), made once:
        # a registry filled under unknown tests is merged at every `if` (thunder: ~340)
        firsts = []
        for s in states:
            at: dict = {}
            for i, key in enumerate(s["keys"]):
                at.setdefault(key, i)
            firsts.append(at)
        elts = []
        for key in keys:
            v = None
            for s, at in zip(states, firsts):
                x = s["elts"][at[key]]
                v = x if v is None else join(v, x)
            elts.append(v)
        elts = tuple(elts)
        new = {"items": elts, "elts": elts, "keys": keys, "is_dict": first["is_dict"]}
    else:
        everywhere, some = _split_items([st["items"] for st in states])
        items = tuple(everywhere) + tuple(join(UNKNOWN, x) for x in some)
        new = {"items": items, "elts": None, "keys": None, "is_dict": any(s["is_dict"] for s in states)}
    for f in _SEQ_FIELDS:
        heap_field(seq, f, new[f])


def _split_items(seqs):
    """The items of every path (by identity: the items are alive in the states), each
    once, in the order a walk of the paths in turn meets them: (those on every path,
    those on some only). An item on every path is on the first, so the first path's
    order is theirs; the C-level passes (``map``, ``compress``) leave to Python only
    the items some paths lack (a registry filled under unknown tests is merged at
    every ``if``: thunder's ~140 items per merge)."""
    first = seqs[0]
    ids0 = list(map(id, first))
    common = set(ids0).intersection(*(map(id, o) for o in seqs[1:]))
    if len(common) == len(ids0):  # (no item twice on the first path, all of it everywhere)
        everywhere = list(first)
    elif len(set(ids0)) == len(ids0):
        everywhere = list(compress(first, map(common.__contains__, ids0)))
    else:
        everywhere, seen = [], set()
        for x in first:
            i = id(x)
            if i in common and i not in seen:
                seen.add(i)
                everywhere.append(x)
    some, seen_some = [], set()
    for o in seqs:
        ids = list(map(id, o)) if o is not first else ids0
        if len(common) == len(ids) and (o is first or len(set(ids)) == len(ids)):
            continue  # every item of this path is everywhere
        for x, i in zip(o, ids):
            if i not in common and i not in seen_some:
                seen_some.add(i)
                some.append(x)
    return everywhere, some


def _split_items_reference(seqs):
    """What :func:`_split_items` gives, item by item (the definition it is tested against)."""
    everywhere, some = [], []
    common = set.intersection(*({id(y) for y in o} for o in seqs))
    seen_everywhere, seen_some = set(), set()
    for o in seqs:
        for x in o:
            i = id(x)
            if i in common:
                if i not in seen_everywhere:
                    seen_everywhere.add(i)
                    everywhere.append(x)
            elif i not in seen_some:
                seen_some.add(i)
                some.append(x)
    return everywhere, some
