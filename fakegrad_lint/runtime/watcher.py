"""The runtime watcher: sees real requires-grad tensors entering fake ops, and
real tensors whose ``.grad`` becomes a FakeTensor.

How it works (see ``torch_compat`` for every torch internal it uses):

* a ``TorchFunctionMode`` sees each torch call with the original tensor
  objects. When no FakeTensorMode is active and no argument is a FakeTensor, it
  calls the function straight away (the cost outside fake regions is one Python
  call, two identity checks, an O(1) mode lookup and a scan of the top-level
  arguments).
* otherwise, a real (non-fake) tensor that requires grad among the arguments
  of an op whose result is fake is an *entry*: recorded with the user frame, and
  the real leaves it reaches are remembered with that site;
* the AssertionError of a default mode is a *crash*, recorded at the user frame
  of the op that raised it;
* ``Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad``
  reach the same mode; around a backward whose roots are fake it collects the
  real leaves of the graph and, afterwards, reports each one whose ``.grad``
  became a FakeTensor as a *hazard*, attributed to the line(s) where it entered
  fake ops. A global optimizer step post-hook does the same for parameters
  stepped with a fake ``.grad``.

Records are plain dicts (JSON-ready). ``type`` is ``entry`` (raw, forward-only
use is safe), ``crash`` or ``hazard``. :meth:`Watcher.events` returns the
user-facing events: hazards and crashes that involved a real requires-grad
tensor, one per (kind, file, line).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from collections.abc import Callable

from fakegrad_lint.runtime import torch_compat as tc
from fakegrad_lint.runtime.errors import FakeGradError
from fakegrad_lint.runtime.messages import event_message, user_events  # noqa: F401
from fakegrad_lint.runtime.messages import guard_message as _guard_message

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIRS = tuple(
    {os.path.abspath(p) + os.sep for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")) if p}
)
_SKIP_PREFIXES = (tc.TORCH_DIR, _PKG_DIR) + _STDLIB_DIRS
_STACK_LIMIT = 24
_TRACK_LIMIT = 4096  # real tensors remembered with their entry sites

_Tensor = tc.Tensor
_is_fake = tc.is_fake
_FakeTensor = tc.FakeTensor
_active_fake_mode = tc.active_fake_mode
_SINK_BACKWARD = tc.SINK_BACKWARD
_SINK_GRAD = tc.SINK_GRAD
# property getters that never dispatch a fake op on the real tensor
_INERT_GETTERS = frozenset({"grad", "_grad", "data", "_base", "grad_fn", "requires_grad", "is_leaf", "shape", "dtype", "device"})

_skip_cache: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    hit = _skip_cache.get(filename)
    if hit is None:
        if filename.startswith("<"):
            hit = True
        else:
            hit = os.path.abspath(filename).startswith(_SKIP_PREFIXES)
        _skip_cache[filename] = hit
    return hit


def user_stack(limit: int = _STACK_LIMIT) -> list[tuple[str, int]]:
    """(filename, line) of the frames outside torch, fakegrad_lint and the stdlib, innermost first."""
    frame = sys._getframe(1)
    out = []
    while frame is not None and len(out) < limit:
        fn = frame.f_code.co_filename
        if not _is_internal(fn):
            out.append((os.path.abspath(fn), frame.f_lineno))
        frame = frame.f_back
    return out


def _user_frame():
    frame = sys._getframe(1)
    while frame is not None:
        if not _is_internal(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def _fake_in(a) -> bool:
    """``a`` is a FakeTensor, or a list/tuple holding one."""
    if isinstance(a, _FakeTensor):
        return True
    return type(a) in (list, tuple) and any(isinstance(b, _FakeTensor) for b in a)


def _has_fake_arg(args, kwargs) -> bool:
    return any(_fake_in(a) for a in args) or bool(kwargs) and any(_fake_in(a) for a in kwargs.values())


def _func_name(func) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        attr = getattr(owner, "__name__", None)
        if attr:
            return f"Tensor.{attr}"
    return name


def _getter_attr(func) -> str | None:
    if getattr(func, "__name__", None) != "__get__":
        return None
    return getattr(getattr(func, "__self__", None), "__name__", None)


def describe_mode(mode, leaked: bool = False) -> str:
    if mode is None:
        return "FakeTensorMode"
    allow = tc.allows_non_fake(mode)
    text = "FakeTensorMode(allow_non_fake_inputs=True)" if allow else "FakeTensorMode()"
    if leaked:
        text = f"the {text} of a leaked FakeTensor"
    return text


def python_path(dotted: str) -> str:
    """A ``named_parameters`` name in Python spelling, as an attribute path:
    ``net.2.weight`` -> ``.net[2].weight`` (ModuleList/Sequential indices),
    ``blocks.a-b.weight`` -> ``.blocks["a-b"].weight`` (ModuleDict keys)."""
    out = []
    for part in dotted.split("."):
        if part.isdigit():
            out.append(f"[{part}]")
        elif part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{part!r}]")
    return "".join(out)


def _name_in_frame(frame, t) -> str | None:
    """A name the user frame binds to ``t``, or ``module.attr`` for a parameter of a local module."""
    if frame is None:
        return None
    try:
        scopes = (frame.f_locals, frame.f_globals)
        for scope in scopes:
            for key, value in list(scope.items()):
                if value is t:
                    return key
        from torch import nn

        for scope in scopes:
            for key, value in list(scope.items()):
                if isinstance(value, nn.Module) and not key.startswith("_"):
                    for pname, p in value.named_parameters():
                        if p is t:
                            return key + python_path(pname)
    except Exception:  # pragma: no cover - best effort only
        return None
    return None


class _Tracked:
    __slots__ = ("name", "parameter", "ref", "reported_grad", "shape", "sites")

    def __init__(self, ref, parameter, shape, name):
        self.ref = ref
        self.sites: list[dict] = []
        self.parameter = parameter
        self.shape = shape
        self.name = name
        self.reported_grad = None


class _WatchMode(tc.TorchFunctionMode):
    def __init__(self, watcher: Watcher):
        super().__init__()
        self._w = watcher

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func in _SINK_BACKWARD:
            return self._w._on_backward(func, args, kwargs)
        if func is _SINK_GRAD:
            return self._w._on_grad(func, args, kwargs)
        mode = _active_fake_mode()
        if mode is None and not _has_fake_arg(args, kwargs):
            return func(*args, **kwargs)
        return self._w._on_fake_op(func, mode, args, kwargs)


_hook_lock = threading.Lock()
_active_watchers: list[Watcher] = []
_hook_handle = None


def _optimizer_post_hook(optimizer, args, kwargs):
    for w in _active_watchers:
        w._on_optimizer_step(optimizer)


class Watcher:
    """Record fake-mode leaks while active. Use as a context manager.

    ``on_record`` is called with each record as it happens (the confirm runner
    streams them to a file). ``raise_on_entry`` turns the first entry or crash
    into a :class:`FakeGradError` (that is :func:`fakegrad_lint.runtime.guard`).
    """

    def __init__(self, *, on_record: Callable[[dict], None] | None = None, raise_on_entry: bool = False):
        self.records: list[dict] = []
        self._on_record = on_record
        self._raise = raise_on_entry
        self._tracked: dict[int, _Tracked] = {}
        self._entry_seen: set = set()
        self._mode: _WatchMode | None = None

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> Watcher:
        global _hook_handle
        if self._mode is not None:
            raise RuntimeError("this Watcher is already active")
        tc.warn_if_unsupported()
        self._mode = _WatchMode(self)
        self._mode.__enter__()
        with _hook_lock:
            _active_watchers.append(self)
            if _hook_handle is None:
                _hook_handle = tc.register_optimizer_step_post_hook(_optimizer_post_hook)
        return self

    def __exit__(self, *exc) -> None:
        global _hook_handle
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(*exc)
        self._tracked.clear()
        with _hook_lock:
            if self in _active_watchers:
                _active_watchers.remove(self)
            if not _active_watchers and _hook_handle is not None:
                _hook_handle.remove()
                _hook_handle = None

    # -- results -----------------------------------------------------------
    def events(self) -> list[dict]:
        """User-facing events: hazards, and crashes that involved a real requires-grad tensor."""
        return user_events(self.records)

    # -- internals ---------------------------------------------------------
    def _emit(self, record: dict) -> None:
        self.records.append(record)
        if self._on_record is not None:
            self._on_record(record)

    def _site(self) -> dict:
        stack = user_stack()
        if stack:
            filename, line = stack[0]
        else:
            filename, line = "<unknown>", 0
        return {"filename": filename, "line": line, "stack": [list(s) for s in stack]}

    def _track(self, t, site: dict | None, frame) -> _Tracked:
        # Strong references on purpose: a weakref on a tensor makes
        # torch.utils.swap_tensors (Module.to_empty / _apply with swapping) fail,
        # and a Python reference does not change the TensorImpl use count it checks.
        # The registry is bounded; the oldest entries go first.
        key = id(t)
        tr = self._tracked.get(key)
        if tr is None or tr.ref is not t:
            tr = _Tracked(t, isinstance(t, tc.Parameter), tuple(t.shape), _name_in_frame(frame, t))
            self._tracked[key] = tr
            if len(self._tracked) > _TRACK_LIMIT:
                self._tracked.pop(next(iter(self._tracked)))
        if site is not None and all((s["filename"], s["line"]) != (site["filename"], site["line"]) for s in tr.sites):
            tr.sites.append(site)
        return tr

    def _on_fake_op(self, func, mode, args, kwargs):
        if _getter_attr(func) in _INERT_GETTERS:
            return func(*args, **kwargs)
        leaked = mode is None
        reals = []
        for t in tc.tree_leaves((args, kwargs)):
            if isinstance(t, _Tensor) and not _is_fake(t) and t.requires_grad:
                reals.append(t)
        if leaked:
            for t in tc.tree_leaves((args, kwargs)):
                if _is_fake(t):
                    mode = tc.fake_mode_of(t)
                    break
        try:
            result = func(*args, **kwargs)
        except AssertionError as exc:
            if tc.FAKE_ASSERTION_TEXT not in str(exc):
                raise
            self._on_crash(func, mode, leaked, reals, exc)
            raise
        if reals:
            for r in tc.tree_leaves(result):
                if _is_fake(r):
                    self._on_entry(func, mode, leaked, reals)
                    break
        return result

    def _describe(self, t, name) -> dict:
        return {
            "shape": list(t.shape),
            "parameter": isinstance(t, tc.Parameter),
            "name": name,
        }

    def _on_crash(self, func, mode, leaked, reals, exc):
        site = self._site()
        frame = _user_frame()
        first = reals[0] if reals else None
        rec = {
            "type": "crash",
            "kind": "crash",
            **site,
            "op": _func_name(func),
            "mode": describe_mode(mode, leaked),
            "allow_non_fake": tc.allows_non_fake(mode),
            "requires_grad": bool(reals),
            "message": str(exc).splitlines()[0] if str(exc) else "AssertionError",
        }
        if first is not None:
            rec.update(self._describe(first, _name_in_frame(frame, first)))
        self._emit(rec)
        if self._raise:
            raise FakeGradError(_guard_message(rec, entered=True)) from exc

    def _on_entry(self, func, mode, leaked, reals):
        site = self._site()
        frame = _user_frame()
        for t in reals:
            tr = self._track(t, site, frame)
            leaves = tc.leaf_variables(t) if t.grad_fn is not None else []
            for leaf in leaves:
                if not _is_fake(leaf):
                    self._track(leaf, site, frame)
            key = (id(t), site["filename"], site["line"])
            if key in self._entry_seen and not self._raise:
                continue
            self._entry_seen.add(key)
            rec = {
                "type": "entry",
                "kind": "entry",
                **site,
                "op": _func_name(func),
                "mode": describe_mode(mode, leaked),
                "allow_non_fake": tc.allows_non_fake(mode),
                "leaked": leaked,
                "shape": list(tr.shape),
                "parameter": tr.parameter,
                "name": tr.name,
            }
            self._emit(rec)
            if self._raise:
                raise FakeGradError(_guard_message(rec, entered=True))

    # sinks
    def _real_leaves_of_fake_roots(self, roots) -> list:
        out = []
        for root in roots:
            if _is_fake(root) and root.grad_fn is not None:
                for leaf in tc.leaf_variables(root):
                    if not _is_fake(leaf):
                        out.append(leaf)
        return out

    def _snapshot(self, tensors) -> dict:
        snap = {}
        for t in tensors:
            g = t.grad
            snap[id(t)] = (t, id(g) if _is_fake(g) else None)
        return snap

    def _on_backward(self, func, args, kwargs):
        if func is _SINK_BACKWARD[0]:  # Tensor.backward(self, gradient, retain_graph, create_graph, inputs)
            roots = [args[0]] if args else []
            inputs = kwargs.get("inputs", args[4] if len(args) > 4 else None)
        else:  # torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables, inputs)
            roots = kwargs.get("tensors", args[0] if args else None)
            inputs = kwargs.get("inputs", args[5] if len(args) > 5 else None)
        roots = [r for r in tc.tree_leaves(roots) if isinstance(r, _Tensor)]
        if not any(_is_fake(r) for r in roots):
            return func(*args, **kwargs)
        candidates = self._real_leaves_of_fake_roots(roots)
        if inputs is not None:
            candidates += [t for t in tc.tree_leaves(inputs) if isinstance(t, _Tensor) and not _is_fake(t)]
        snap = self._snapshot(candidates)
        result = func(*args, **kwargs)
        sink = self._site()
        for t, before in snap.values():
            g = t.grad
            if _is_fake(g) and id(g) != before:
                self._on_hazard(t, g, "backward" if func is _SINK_BACKWARD[0] else "torch.autograd.backward", sink)
        return result

    def _on_grad(self, func, args, kwargs):
        inputs = kwargs.get("inputs", args[1] if len(args) > 1 else None)
        result = func(*args, **kwargs)
        if inputs is None:
            return result
        single = isinstance(inputs, _Tensor)
        ins = [inputs] if single else list(inputs)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        sink = None
        for t, g in zip(ins, outs):
            if isinstance(t, _Tensor) and not _is_fake(t) and _is_fake(g):
                if sink is None:
                    sink = self._site()
                self._on_hazard(t, g, "torch.autograd.grad", sink, returned=True)
        return result

    def _on_optimizer_step(self, optimizer):
        sink = None
        with tc.disable_torch_function():
            for group in getattr(optimizer, "param_groups", ()):
                for p in group.get("params", ()):
                    if not isinstance(p, _Tensor) or _is_fake(p):
                        continue
                    g = p.grad
                    if not _is_fake(g):
                        continue
                    tr = self._tracked.get(id(p))
                    if tr is not None and tr.ref is p and tr.reported_grad == id(g):
                        continue
                    if sink is None:
                        sink = self._site()
                    self._on_hazard(p, g, f"{type(optimizer).__name__}.step", sink)

    def _on_hazard(self, t, grad, sink_name: str, sink: dict, returned: bool = False):
        tr = self._tracked.get(id(t))
        if tr is None or tr.ref is not t:
            tr = self._track(t, None, _user_frame())
        tr.reported_grad = id(grad)
        sites = tr.sites or [None]
        for site in sites:
            where = site if site is not None else sink
            rec = {
                "type": "hazard",
                "kind": "hazard",
                "filename": where["filename"],
                "line": where["line"],
                "stack": where["stack"],
                "entry_seen": site is not None,
                "shape": list(tr.shape),
                "parameter": tr.parameter,
                "name": tr.name,
                "sink": sink_name,
                "sink_filename": sink["filename"],
                "sink_line": sink["line"],
                "returned": returned,
            }
            self._emit(rec)


def watch(**kwargs) -> Watcher:
    """A new :class:`Watcher` (use ``with watch() as w: ...; w.events()``)."""
    return Watcher(**kwargs)
