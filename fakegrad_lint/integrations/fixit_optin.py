"""The opt-in FGL004 as a Fixit rule (``enable = ["fakegrad_lint.integrations.fixit_optin"]``)."""

from __future__ import annotations

from fakegrad_lint.integrations.fixit import _CODES, _rule

RealGradEntersFakeRegion = _rule("RealGradEntersFakeRegion", "FGL004", _CODES | {"FGL004"})

__all__ = ["RealGradEntersFakeRegion"]
