"""The dispatch context: everything that decides, at one point of the program, what
an op does with its operands. One immutable value; entering or leaving a context
manager makes a new one, so a saved context can never change under its holder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class DispatchContext:
    regions: tuple = ()  # active fake regions (Region), innermost last
    grad_enabled: bool = True  # False under no_grad / inference_mode (or an unknown set_grad_enabled)
    inference: bool = False  # inside inference_mode: no op records a graph, whatever grad mode says
    dispatch_off: int = 0  # > 0 under unset_fake_temporarily / no_dispatch: no region dispatches
    patched: frozenset = frozenset()  # modes whose allow_non_fake_inputs is patched to True
    fake_copy: object = None  # the mode of an active FakeCopyMode (deepcopy makes fakes)
    meta_device: bool = False  # inside `with torch.device("meta"):`
    may: int = 0  # > 0: on a path that only may be taken (one option of a may value)

    def active_region(self):
        if self.regions and not self.dispatch_off:
            return self.regions[-1]
        return None

    def allow_of(self, mode):
        return True if mode in self.patched else mode.allow

    def entering(self, region) -> DispatchContext:
        return self.but(regions=self.regions + (region,))

    def leaving(self, region) -> DispatchContext:
        if not any(r is region for r in self.regions):
            return self
        return self.but(regions=tuple(r for r in self.regions if r is not region))

    def but(self, **changes) -> DispatchContext:
        """A copy with ``changes`` (``dataclasses.replace`` without its per-call
        field checks: this runs on every context change)."""
        new = object.__new__(DispatchContext)
        d = new.__dict__
        d.update(self.__dict__)
        d.update(changes)
        return new


class CallSite(NamedTuple):
    """One descent into a function: where the fix of a leak inside it can convert
    the argument that carries the real value."""

    caller: object  # the calling function's node (the module for top-level code)
    call: object  # the ast.Call
    arg_exprs: list  # the argument expressions, aligned with ``arg_values`` (None: not an expression)
    arg_values: list
    regions: tuple = ()  # the regions active in the caller when it made the call
