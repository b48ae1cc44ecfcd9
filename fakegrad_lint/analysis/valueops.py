"""What Python answers about abstract values, as pure functions: truth
(``bool(v)``), comparisons, ``is None``, string folding (f-strings, ``+``), dict
literals with constant keys, a call's operands, flattening containers, and whether a
value carries anything the rules care about.

No state and no AST walking: the walker (``statements``, ``expressions``, ``calls``)
calls these.
"""

from __future__ import annotations

import ast

from fakegrad_lint.analysis import torch_tables as N
from fakegrad_lint.analysis.values import (UNKNOWN, ArgParserVal, BoundMethod, ClassVal, ConstVal, CtxVal, DecoratorVal,
    ExitStackVal, ExportedProgramVal, FieldVal, FuncVal, GeneratorVal, InstanceVal, MaybeVal, MethodRef, ModeVal, ModRef, ModuleVal,
    OptimizerVal, PartialVal, SeqVal, TracedFn, TransformVal, TVal, is_enum_member, join_all, union_all)


def _const_kw(call, name, default=None):
    for kw in call.keywords:
        if kw.arg == name:
            if isinstance(kw.value, ast.Constant):
                return kw.value.value
            return _NONCONST
    return default


_NONCONST = object()


def _is_none_const(v):
    return isinstance(v, ConstVal) and v.value is None


_KNOWN_OBJECTS = (ModeVal, CtxVal, ExitStackVal, FuncVal, ClassVal, BoundMethod, PartialVal, TracedFn, TransformVal,
                  OptimizerVal, DecoratorVal, InstanceVal, ModuleVal, TVal, SeqVal, ExportedProgramVal, FieldVal, MethodRef)


_CMP = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def _is_none_test(v):
    """``v is None``: True, False, or None when not known."""
    if isinstance(v, ConstVal):
        return v.value is None
    if isinstance(v, _KNOWN_OBJECTS):
        return False
    if isinstance(v, MaybeVal):
        answers = {_is_none_test(o) for o in v.options}
        return answers.pop() if len(answers) == 1 else None
    return None


def _identity(a, b):
    """``a is b`` for singletons whose identity is known: members of the file's enums
    (whose ``==`` is identity unless the class defines ``__eq__``), against each other
    or against None. None: not known."""
    if isinstance(a, MaybeVal) and not a.each or isinstance(b, MaybeVal) and not b.each:
        answers = {_identity(x, y) for x in _opts(a) for y in _opts(b)}
        return answers.pop() if len(answers) == 1 else None
    if is_enum_member(a) and is_enum_member(b):
        if any(c.lookup_method("__eq__") for c in (a.cls, b.cls)):
            return None
        return a is b
    if (is_enum_member(a) and _is_none_const(b)) or (is_enum_member(b) and _is_none_const(a)):
        return False
    return None


def _opts(v):
    return v.options if isinstance(v, MaybeVal) and not v.each else (v,)


def _compare(ops, vals):
    """A comparison Python can answer from known values (None: not known)."""
    result = True
    for op, a, b in zip(ops, vals, vals[1:]):
        t = type(op)
        same = _identity(a, b) if t in (ast.Is, ast.IsNot, ast.Eq, ast.NotEq) else None
        if same is not None:
            r = same if t in (ast.Is, ast.Eq) else not same
        elif t in (ast.Is, ast.IsNot):
            if _is_none_const(b):
                r = _is_none_test(a)
            elif _is_none_const(a):
                r = _is_none_test(b)
            else:
                return None
            if r is None:
                return None
            r = r if t is ast.Is else not r
        elif t in _CMP and _is_version_info(a) and _int_tuple(b) is not None:
            answers = {bool(_CMP[t](v, _int_tuple(b))) for v in N.PYTHON_VERSIONS}
            if len(answers) != 1:
                return None
            r = answers.pop()
        elif t in _CMP and isinstance(a, ConstVal) and isinstance(b, ConstVal):
            try:
                r = bool(_CMP[t](a.value, b.value))
            except Exception:
                return None
        elif t in (ast.In, ast.NotIn) and isinstance(b, SeqVal) and b.elts == () and (b.keys == () or not b.is_dict):
            r = t is ast.NotIn  # an empty container holds nothing
        elif t in (ast.In, ast.NotIn) and const_tuple(a) is not None and isinstance(b, SeqVal) and b.elts is not None \
                and b.keys is not None:
            r = (const_tuple(a) in b.keys) is (t is ast.In)  # `(seq_len, dim) in cache`
        elif t in (ast.In, ast.NotIn) and isinstance(a, ConstVal) and isinstance(b, SeqVal) and b.elts is not None:
            keys = b.keys if b.keys is not None else b.elts
            if b.keys is None and not all(isinstance(x, ConstVal) for x in keys):
                return None
            pool = [k for k in keys] if b.keys is not None else [x.value for x in keys]
            try:
                r = a.value in pool
            except Exception:
                return None
            r = r if t is ast.In else not r
        else:
            return None
        result = result and r
    return result


def _is_version_info(v):
    return isinstance(v, ModRef) and v.qualname == "sys.version_info"


def _int_tuple(v):
    """A tuple of known ints (``(3, 10)``), else None."""
    if not (isinstance(v, SeqVal) and v.elts is not None and v.keys is None):
        return None
    if not all(isinstance(x, ConstVal) and type(x.value) is int for x in v.elts):
        return None
    return tuple(x.value for x in v.elts)


def _is_module_value(v):
    if isinstance(v, MaybeVal):
        opts = [o for o in v.options if not _is_none_const(o)]
        return bool(opts) and all(isinstance(o, ModuleVal) for o in opts)
    return isinstance(v, ModuleVal)


def _one_of(v):
    """An each-of value (the items of a container, all used) read as a single pick: one of
    them (`sorted(d, key=len)[0]`, `next(iter(d))`, `set(d).pop()`), never each in turn."""
    if isinstance(v, MaybeVal) and v.each:
        return join_all(v.options)
    return v


def _values_of(seq):
    """The values of a mapping (each of them)."""
    return union_all(seq.items)


def _dict_val(keys, values):
    """A dict with constant keys (later keys win, as in Python)."""
    ks, vs = [], []
    for k, v in zip(keys, values):
        try:
            hash(k)
        except TypeError:
            return SeqVal(tuple(values), is_dict=True)
        if k in ks:
            i = ks.index(k)
            del ks[i], vs[i]
        ks.append(k)
        vs.append(v)
    return SeqVal(tuple(vs), tuple(vs), tuple(ks), is_dict=True)


# The test of _interesting_by_isinstance that a type falls under (the first that matches,
# in its order), found once per type: thunder's op registries send _interesting over
# tens of thousands of values per file, and the chain of isinstance tests was a
# quarter of the analysis there. A type under two of the tests takes the chain itself.
_K_NONE, _K_TENSOR, _K_CONST, _K_ALWAYS, _K_CLASS, _K_SEQ, _K_MAYBE, _K_INSTANCE, _K_METHOD, _K_PARTIAL, _K_CHAIN = range(11)
_KINDS: dict = {}


def _kind_of(t) -> int:
    tests = (
        (_K_TENSOR, TVal), (_K_CONST, ConstVal),
        (_K_ALWAYS, (ModuleVal, ModeVal, CtxVal, ExitStackVal, TracedFn, OptimizerVal, TransformVal, ExportedProgramVal,
                     GeneratorVal)),
        (_K_CLASS, ClassVal), (_K_SEQ, SeqVal), (_K_MAYBE, MaybeVal), (_K_INSTANCE, InstanceVal),
        (_K_METHOD, MethodRef), (_K_PARTIAL, PartialVal),
    )
    hits = [k for k, cls in tests if issubclass(t, cls)]
    kind = _K_NONE if not hits else hits[0] if len(hits) == 1 else _K_CHAIN
    _KINDS[t] = kind
    return kind


def _interesting(v, depth=0):
    """Does this value carry anything the rules care about? (The same answer as
    :func:`_interesting_by_isinstance`, which defines it, by one lookup of the type.)"""
    kinds = _KINDS
    k = kinds.get(type(v))
    if k is None:
        k = _kind_of(type(v))
    if k == _K_NONE:
        return False
    if k == _K_TENSOR:
        return bool(v.origins or v.mode is not None or v.leaks)
    if k == _K_CONST:
        s = v.value
        if not isinstance(s, str):
            return False
        # a name of an entry point as data: importlib / getattr can resolve it to the class
        for w in N.ENTRY_WORDS:
            if w in s:
                return True
        return False
    if k == _K_ALWAYS:
        return True  # (a generator: its body runs where it is consumed)
    if k == _K_CLASS:
        return v.is_module or v.matters  # calling it makes a module (or an instance whose code names a mode)
    if k == _K_CHAIN:
        return _interesting_by_isinstance(v, depth)
    if depth >= 3:
        return False
    if k == _K_SEQ or k == _K_MAYBE:
        items = v.items if k == _K_SEQ else v.options
    elif k == _K_INSTANCE:
        if v.cls.matters:
            return v.cls.matters
        items = v.attrs.values()
    elif k == _K_METHOD:
        return _interesting(v.recv, depth + 1)
    else:  # _K_PARTIAL
        # functools.partial(step, model, opt): calling it passes what it holds;
        # functools.partial(FakeTensorMode, allow_non_fake_inputs=True) makes a mode
        if _is_mode_class(v.func):
            return True
        items = (v.func, *v.args, *v.kwargs.values())
    depth += 1
    for x in items:
        if kinds.get(type(x)) != _K_NONE and _interesting(x, depth):
            return True
    return False


def _interesting_by_isinstance(v, depth=0):
    """What :func:`_interesting` answers, as the chain of ``isinstance`` tests that defines it
    (run for a value whose type falls under two of its tests)."""
    if isinstance(v, TVal):
        return bool(v.origins or v.mode is not None or v.leaks)
    if isinstance(v, ConstVal) and isinstance(v.value, str):
        # a name of an entry point as data: importlib / getattr can resolve it to the class
        return any(w in v.value for w in N.ENTRY_WORDS)
    if isinstance(v, (ModuleVal, ModeVal, CtxVal, ExitStackVal, TracedFn, OptimizerVal, TransformVal, ExportedProgramVal,
                      GeneratorVal)):
        return True  # (a generator: its body runs where it is consumed)
    if isinstance(v, ClassVal):
        return v.is_module or v.matters  # calling it makes a module (or an instance whose code names a mode)
    if isinstance(v, (SeqVal, MaybeVal)) and depth < 3:
        items = v.items if isinstance(v, SeqVal) else v.options
        return any(_interesting_by_isinstance(x, depth + 1) for x in items)
    if isinstance(v, InstanceVal) and depth < 3:
        return v.cls.matters or any(_interesting_by_isinstance(x, depth + 1) for x in v.attrs.values())
    if isinstance(v, MethodRef) and depth < 3:
        return _interesting_by_isinstance(v.recv, depth + 1)
    if isinstance(v, PartialVal) and depth < 3:
        # functools.partial(step, model, opt): calling it passes what it holds;
        # functools.partial(FakeTensorMode, allow_non_fake_inputs=True) makes a mode
        return _is_mode_class(v.func) or any(_interesting_by_isinstance(x, depth + 1) for x in (v.func, *v.args, *v.kwargs.values()))
    return False


def _is_mode_class(v) -> bool:
    from fakegrad_lint.analysis import torch_tables as T
    from fakegrad_lint.analysis.values import ModRef

    return isinstance(v, ModRef) and v.qualname in T.FAKE_TENSOR_MODE


def _arg_exprs(e):
    """The expressions of a call's positional arguments, aligned with evaluated args."""
    if not isinstance(e, ast.Call):
        return []
    return [a.value if isinstance(a, ast.Starred) else a for a in e.args]


# nodes a getattr name may be made of to be looked at before the call runs
_PURE_NAME_NODES = (ast.Constant, ast.Name, ast.Attribute, ast.JoinedStr, ast.FormattedValue, ast.BinOp,
                    ast.expr_context, ast.operator)


class _FormattedPart:
    """An f-string's ``{value!conv:spec}``: ``fmt`` turns a known value into its text."""

    __slots__ = ("value", "fmt")

    def __init__(self, value, fmt):
        self.value = value
        self.fmt = fmt


_FOLD_TYPES = (str, int, float, bool, type(None))


def _fold_strings(parts, combine, only=_FOLD_TYPES):
    """Fold a string built from ``parts`` (ConstVals, may values of ConstVals, or
    _FormattedParts of those) when every part is known: a ConstVal, or, when a single
    may value takes part, a may value of the strings for each of its options (two
    different may values would pair options that never meet). Else UNKNOWN."""
    inner = [p.value if isinstance(p, _FormattedPart) else p for p in parts]
    maybes = []
    for v in inner:
        if isinstance(v, MaybeVal) and not any(v is m for m in maybes):
            maybes.append(v)
    if len(maybes) > 1:
        return UNKNOWN
    choices = list(maybes[0].options) if maybes else [None]
    if not choices or any(not isinstance(o, ConstVal) for o in choices if o is not None):
        return UNKNOWN
    out = []
    for choice in choices:
        texts = []
        for p, v in zip(parts, inner):
            c = choice if isinstance(v, MaybeVal) else v
            if not isinstance(c, ConstVal) or type(c.value) not in only:
                return UNKNOWN
            if isinstance(p, _FormattedPart):
                try:
                    texts.append(p.fmt(c.value))
                except Exception:
                    return UNKNOWN
            elif isinstance(c.value, str):
                texts.append(c.value)
            else:
                return UNKNOWN
        out.append(ConstVal(combine(texts)))
    if not maybes:
        return out[0]
    return MaybeVal(tuple(out), maybes[0].each)


def _operands(e, args, kwargs):
    exprs = _arg_exprs(e)
    out = [(a, exprs[i] if i < len(exprs) and len(exprs) == len(args) else None) for i, a in enumerate(args)]
    kw_exprs = {kw.arg: kw.value for kw in getattr(e, "keywords", ()) if kw.arg is not None}
    out += [(v, kw_exprs.get(k)) for k, v in kwargs.items()]
    return out


def _flatten(v, depth=0):
    if isinstance(v, SeqVal) and depth < 4:
        out = []
        for x in v.items:
            out.extend(_flatten(x, depth + 1))
        return out
    return [v]


def _is_tensorish(v):
    if isinstance(v, (TVal, ModuleVal)):
        return True
    if isinstance(v, MaybeVal):
        return any(_is_tensorish(o) for o in v.options)
    return False


def _truth(v):
    """bool(v) when Python's answer is known: constants, objects without
    ``__bool__``/``__len__`` (modes, context managers, functions, classes), literals."""
    if isinstance(v, ConstVal):
        try:
            return bool(v.value)
        except Exception:
            return None
    if isinstance(v, (ModeVal, CtxVal, ExitStackVal, FuncVal, ClassVal, BoundMethod, PartialVal, TracedFn,
                      TransformVal, OptimizerVal, DecoratorVal, MethodRef)):
        return True
    if isinstance(v, InstanceVal):
        cls = v.cls
        if is_enum_member(v):
            # a member is true unless its class says otherwise (or an int/str mixin's value may be 0 / "")
            mixed = any(isinstance(b, ModRef) and b.qualname in N.ENUM_VALUE_MIXINS for c in cls.mro for b in c.bases)
            return None if mixed or cls.lookup_method("__bool__") or cls.lookup_method("__len__") else True
        if all(isinstance(b, ClassVal) for c in cls.mro for b in c.bases) and not (
            cls.lookup_method("__bool__") or cls.lookup_method("__len__")
        ):
            return True
        return None
    if isinstance(v, SeqVal) and v.elts is not None:
        return bool(v.elts)
    if isinstance(v, MaybeVal) and v.options:
        # one of (or each of) several values: known when every option answers alike
        answers = {_truth(o) for o in v.options}
        return answers.pop() if len(answers) == 1 else None
    return None


def _kw_true(kwargs, name):
    v = kwargs.get(name)
    return isinstance(v, ConstVal) and v.value is True


def _kw_false(kwargs, name):
    v = kwargs.get(name)
    return isinstance(v, ConstVal) and v.value is False


def _carries(values, origin, depth=0):
    """Does one of ``values`` hold the real value ``origin`` (directly, in a
    container, or in an attribute of an object)?"""
    for v in values:
        if origin in v.real_rg():
            return True
        if depth < 3:
            if isinstance(v, (InstanceVal, ModuleVal)) and _carries(list(v.attrs.values()), origin, depth + 1):
                return True
            if isinstance(v, SeqVal) and _carries(list(v.items), origin, depth + 1):
                return True
            if isinstance(v, MaybeVal) and _carries(list(v.options), origin, depth + 1):
                return True
            if isinstance(v, BoundMethod) and _carries([v.self_val], origin, depth + 1):
                return True
    return False


def py_value(obj, depth=0):
    """The abstract value of plain Python data (what ``json.loads`` or ``argparse``
    returns): constants, lists and tuples of known elements, dicts with constant keys;
    anything else (or nested too deep) is unknown."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return ConstVal(obj)
    if depth > 8:
        return UNKNOWN
    if isinstance(obj, (list, tuple)):
        elts = tuple(py_value(x, depth + 1) for x in obj)
        return SeqVal(elts, elts)
    if isinstance(obj, dict) and all(isinstance(k, (str, int, float, bool)) or k is None for k in obj):
        return _dict_val(list(obj), [py_value(v, depth + 1) for v in obj.values()])
    return UNKNOWN


def const_data(v, depth=0):
    """The Python data an abstract value is known to be (the inverse of ``py_value``):
    (True, data) for constants and containers of known constants, (False, None) otherwise."""
    if isinstance(v, ConstVal):
        return True, v.value
    if depth > 8 or not isinstance(v, SeqVal) or v.elts is None:
        return False, None
    parts = [const_data(x, depth + 1) for x in v.elts]
    if not all(ok for ok, _ in parts):
        return False, None
    if v.is_dict:
        if v.keys is None:
            return False, None
        return True, dict(zip(v.keys, (d for _, d in parts)))
    return True, [d for _, d in parts]


# ------------------------------------------------------------ argparse, run as Python runs it

class _Opaque:
    """A value argparse passes through without looking at it (a default or const
    that is not plain data): the parsed namespace maps it back to the abstract value."""

    def __init__(self, value):
        self.value = value


_UNKNOWN_TYPED = object()  # what an unknown ``type=`` callable made of a string
_ARGPARSE_TYPES = {"builtins.int": int, "builtins.float": float, "builtins.str": str}
_ARGPARSE_ACTIONS = frozenset({"store", "store_true", "store_false", "store_const", "append", "append_const",
                               "count", "extend"})
_ARGPARSE_PLAIN_OPTIONS = frozenset({"help", "metavar"})
_PARSER_OPTIONS = frozenset({"prog", "usage", "description", "epilog", "formatter_class", "add_help",
                             "allow_abbrev", "prefix_chars", "exit_on_error"})


def _argparse_arg(v, opaque):
    """A default/const for the real parser: plain data as it is, anything else opaque."""
    ok, data = const_data(v)
    if ok:
        return data
    box = _Opaque(v)
    opaque.append(box)
    return box


def argparse_kwargs(args, kwargs):
    """``add_argument(*flags, **options)`` as real argparse arguments: (flags, options,
    opaque dest) or None when the call cannot be read (its flags, an unknown option)."""
    flags = [a.value for a in args if isinstance(a, ConstVal) and isinstance(a.value, str)]
    if len(flags) != len(args) or not flags:
        return None
    out, opaque_dest, boxes = {}, False, []
    for k, v in kwargs.items():
        if k == "action":
            if isinstance(v, ConstVal) and v.value in _ARGPARSE_ACTIONS:
                out[k] = v.value
            elif isinstance(v, ModRef) and v.qualname == "argparse.BooleanOptionalAction":
                import argparse
                out[k] = argparse.BooleanOptionalAction
            else:
                return None  # a custom action: what it stores is not known
        elif k == "type":
            out[k] = (_ARGPARSE_TYPES[v.qualname] if isinstance(v, ModRef) and v.qualname in _ARGPARSE_TYPES
                      else (lambda s: _UNKNOWN_TYPED))
        elif k in ("default", "const"):
            out[k] = _argparse_arg(v, boxes)
        elif k in ("dest",):
            if not (isinstance(v, ConstVal) and isinstance(v.value, str)):
                return None
            out[k] = v.value
        elif k in ("nargs", "required"):
            ok, data = const_data(v)
            if not ok:
                return None
            out[k] = data
        elif k == "choices":
            ok, data = const_data(v)
            if ok and isinstance(data, (list, tuple, str)):
                out[k] = data
            else:
                opaque_dest = True  # an unknown set of choices: the value parsed is not known to be valid
        elif k not in _ARGPARSE_PLAIN_OPTIONS:
            return None
    return flags, out, opaque_dest


def argparse_parse(options, specs, defaults, argv, known_only):
    """Parse the constant argument list ``argv`` as ``argparse`` does with the arguments
    ``specs`` declared ((group, flags, options, opaque) in order; group None or
    ("mutex", n, required)): the namespace as {dest: Value}, plus the leftover strings for
    ``parse_known_args``; None when parsing exits (an error, ``--help``) or is not known."""
    import argparse
    import contextlib
    import io

    boxes = []
    try:
        parser = argparse.ArgumentParser(**options, exit_on_error=False)
        groups = {}
        opaque = set()
        for group, flags, opts, opaque_dest in specs:
            target = parser
            if group is not None:
                if group not in groups:
                    groups[group] = parser.add_mutually_exclusive_group(required=group[2])
                target = groups[group]
            action = target.add_argument(*flags, **opts)
            if opaque_dest:
                opaque.add(action.dest)
        parser.set_defaults(**{k: _argparse_arg(v, boxes) for k, v in defaults.items()})
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            if known_only:
                ns, rest = parser.parse_known_args(list(argv))
            else:
                ns, rest = parser.parse_args(list(argv)), []
    except (Exception, SystemExit):
        return None
    out = {}
    for k, v in vars(ns).items():
        if k in opaque or v is _UNKNOWN_TYPED or (isinstance(v, list) and _UNKNOWN_TYPED in v):
            out[k] = UNKNOWN
        elif isinstance(v, _Opaque):
            out[k] = v.value
        else:
            out[k] = py_value(v)
    return out, rest


def new_parser(args, kwargs):
    """``argparse.ArgumentParser(...)``: its plain options kept for parsing (``prog``
    positionally too); ``parents=``, ``argument_default=`` or an unknown option make
    what it parses unknown."""
    parser = ArgParserVal()
    names = ("prog", "usage", "description", "epilog")
    given = dict(zip(names, args))
    given.update(kwargs)
    for k, v in given.items():
        if k == "formatter_class":
            continue
        if k in _PARSER_OPTIONS and k != "exit_on_error" and isinstance(v, ConstVal):
            parser.options[k] = v.value
        elif k != "exit_on_error" or not isinstance(v, ConstVal):
            parser.complete = False
    if len(args) > len(names):
        parser.complete = False
    return parser


MAX_JSON_TEXT = 65536  # a constant JSON text read up to this size


def json_loads(text):
    """``json.loads`` of a constant text: the data it holds (unknown for anything else
    or a text that does not parse: the program raises there)."""
    if not (isinstance(text, ConstVal) and isinstance(text.value, (str, bytes)) and len(text.value) <= MAX_JSON_TEXT):
        return UNKNOWN
    import json

    try:
        data = json.loads(text.value)
    except ValueError:
        return UNKNOWN
    return py_value(data)


_BINOPS = None


def fold_binop(op, a, b):
    """``a <op> b`` of two constants, as Python computes it (numbers, strings, bytes,
    tuples, bounded in size); None when not both constants or Python raises."""
    global _BINOPS
    if not (isinstance(a, ConstVal) and isinstance(b, ConstVal)):
        return None
    if _BINOPS is None:
        import operator

        _BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
                   ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
                   ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
                   ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
    fn = _BINOPS.get(type(op))
    x, y = a.value, b.value
    plain = (bool, int, float)
    if fn is None or not (type(x) in plain + (str, bytes) and type(y) in plain + (str, bytes)):
        return None
    if isinstance(op, (ast.Pow, ast.LShift)) and not (type(y) in plain and abs(y) <= 64 and (type(x) in plain and abs(x) < 2 ** 64)):
        return None  # (a huge number: not worth computing)
    if isinstance(op, ast.Mult) and (isinstance(x, (str, bytes)) or isinstance(y, (str, bytes))):
        n = y if isinstance(x, (str, bytes)) else x
        if not (type(n) is int and n * len(x if isinstance(x, (str, bytes)) else y) <= 4096):
            return None
    try:
        return ConstVal(fn(x, y))
    except Exception:
        return None


def concat_seqs(left, right):
    """``list + list`` / ``tuple + tuple``: the elements in order when both are known."""
    if (left.elts is not None and right.elts is not None and not left.is_dict and not right.is_dict
            and left.keys is None and right.keys is None):
        elts = left.elts + right.elts
        return SeqVal(elts, elts)
    return SeqVal(left.items + right.items)


def const_tuple(v):
    """A tuple of known constants (``(seq_len, dim)``) as Python's hashable tuple; None
    for anything else."""
    if not (isinstance(v, SeqVal) and not v.is_dict and v.keys is None and v.elts is not None
            and len(v.elts) <= 16 and all(isinstance(x, ConstVal) for x in v.elts)):
        return None
    out = tuple(x.value for x in v.elts)
    try:
        hash(out)
    except TypeError:
        return None
    return out


def known_iteration(v):
    """What iterating ``v`` gives, in order, when Python's elements are known (a list or
    tuple of known elements, a dict's known keys); None: not known."""
    if not isinstance(v, SeqVal):
        return None
    if v.is_dict:
        return [ConstVal(k) for k in v.keys] if v.keys is not None and v.elts is not None else None
    return list(v.elts) if v.elts is not None and v.keys is None else None
