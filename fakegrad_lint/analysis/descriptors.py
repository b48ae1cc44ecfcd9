"""Python's descriptor protocol for the file's own classes.

A class attribute whose class defines ``__get__`` is a descriptor; one whose class
also defines ``__set__`` or ``__delete__`` is a *data* descriptor. For an instance
``obj`` of ``C`` (``object.__getattribute__``):

1. a data descriptor found on ``type(obj)``'s MRO wins: ``type(d).__get__(d, obj, C)``;
2. else the instance's ``__dict__``;
3. else a non-data descriptor: ``type(d).__get__(d, obj, C)`` (functions bind this way);
4. else the plain class attribute.

``obj.name = v`` runs ``type(d).__set__(d, obj, v)`` for a data descriptor, else it
writes the instance's ``__dict__``. ``C.name`` runs ``__get__(d, None, C)``. When a
class is made, ``type.__new__`` calls ``__set_name__(d, C, name)`` on every value of
its namespace whose class defines it (before ``__init_subclass__``).

Only instances of plain classes (``InstanceVal``) take the data-descriptor paths:
``nn.Module.__setattr__`` keeps modules and parameters in its own dicts, so a module's
attributes stay as the module model has them.
"""

from __future__ import annotations

from fakegrad_lint.analysis.state import YieldReached, _BlockExit
from fakegrad_lint.analysis.values import ClassVal, ConstVal, InstanceVal


def class_lookup(cls, attr):
    """The value ``attr`` names on ``cls``'s MRO (the first class that binds it, a
    ``def`` or an assignment of its body), or None."""
    for c in cls.mro or (cls,):
        if attr in c.own:
            return c.own[attr]
        if attr in c.attrs:
            return c.attrs[attr]
    return None


def descriptor_kind(v):
    """"data" / "non-data" for an instance of a class of the file defining ``__get__``
    (and ``__set__`` or ``__delete__``); "set-only" for one with ``__set__`` but no
    ``__get__``; None for anything else."""
    if not isinstance(v, InstanceVal) or not isinstance(v.cls, ClassVal):
        return None
    get = v.cls.lookup_method("__get__")
    setter = v.cls.lookup_method("__set__") or v.cls.lookup_method("__delete__")
    if get is None:
        return "set-only" if setter is not None else None
    return "data" if setter is not None else "non-data"


class DescriptorsMixin:
    """The descriptor protocol on attribute reads, writes and class creation."""

    def descriptor_get(self, d, obj, owner, st):
        """``type(d).__get__(d, obj, owner)`` (``obj`` None: read on the class)."""
        get = d.cls.lookup_method("__get__")
        return self.call_function(get, [d, ConstVal(None) if obj is None else obj, owner], {}, st, force=True)

    def data_descriptor_read(self, obj, attr, st):
        """``obj.attr`` when a data descriptor on ``type(obj)`` takes it (step 1), else None."""
        if not isinstance(obj, InstanceVal) or not isinstance(obj.cls, ClassVal):
            return None
        d = class_lookup(obj.cls, attr)
        if descriptor_kind(d) != "data":
            return None
        return self.descriptor_get(d, obj, obj.cls, st)

    def data_descriptor_write(self, obj, attr, val, st):
        """``obj.attr = val`` through a data descriptor's ``__set__``: True when one took it."""
        if not isinstance(obj, InstanceVal) or not isinstance(obj.cls, ClassVal):
            return False
        d = class_lookup(obj.cls, attr)
        if descriptor_kind(d) not in ("data", "set-only"):
            return False
        setter = d.cls.lookup_method("__set__")
        if setter is None:
            return False  # (`__delete__` only: assignment raises AttributeError)
        self.call_function(setter, [d, obj, val], {}, st, force=True)
        return True

    def set_names(self, cv, st):
        """``type.__new__``: ``__set_name__(value, cls, name)`` for the namespace's values."""
        for name, v in list(cv.own.items()) + list(cv.attrs.items()):
            if not isinstance(v, InstanceVal) or not isinstance(v.cls, ClassVal):
                continue
            hook = v.cls.lookup_method("__set_name__")
            if hook is None:
                continue
            try:
                self.call_function(hook, [v, cv, ConstVal(name)], {}, st, force=True)
            except (YieldReached, _BlockExit):
                pass
