"""The opt-in FGL004 as a Fixit rule (``enable = ["fakegrad_lint.integrations.fixit_optin"]``)."""

from __future__ import annotations

from fakegrad_lint.integrations.fixit import _CODES, _rule
from fakegrad_lint.rules import FORWARD_ONLY_CODE

RealGradEntersFakeRegion = _rule("RealGradEntersFakeRegion", FORWARD_ONLY_CODE, _CODES | {FORWARD_ONLY_CODE})

__all__ = ["RealGradEntersFakeRegion"]
