"""Texts for runtime records (no torch import here)."""

from __future__ import annotations

import os


def _tensor_text(rec: dict) -> str:
    what = "Parameter" if rec.get("parameter") else "tensor"
    shape = tuple(rec.get("shape") or ())
    name = rec.get("name")
    named = f" `{name}`" if name else ""
    return f"real requires-grad {what}{named} of shape {shape}"


def guard_message(rec: dict, entered: bool) -> str:
    where = f"{rec['filename']}:{rec['line']}"
    if rec["type"] == "crash" and not rec.get("requires_grad"):
        return f"a real tensor reached `{rec['op']}` under {rec['mode']} at {where}"
    return f"{_tensor_text(rec)} entered fake op `{rec['op']}` under {rec['mode']} at {where}"


def event_message(rec: dict) -> str:
    """One line describing a user-facing event."""
    if rec["kind"] == "crash":
        if rec.get("requires_grad") is False:
            return f"a real tensor reached `{rec.get('op', '?')}` under {rec.get('mode', 'FakeTensorMode()')}: AssertionError"
        return (
            f"{_tensor_text(rec)} reached `{rec.get('op', '?')}` under {rec.get('mode', 'FakeTensorMode()')}: "
            "AssertionError: Please convert all Tensors to FakeTensors first"
        )
    sink = f"{rec['sink']} at {os.path.basename(rec['sink_filename'])}:{rec['sink_line']}"
    if rec.get("returned"):
        return f"{_tensor_text(rec)} entered fake ops here; {sink} returned a FakeTensor gradient for it"
    if not rec.get("entry_seen", True):
        return f"{_tensor_text(rec)} has a FakeTensor .grad after {sink}"
    return f"{_tensor_text(rec)} entered fake ops here; its .grad became a FakeTensor after {sink}"


def user_events(records: list[dict]) -> list[dict]:
    """Hazards and requires-grad crashes, first record per (kind, filename, line)."""
    seen = {}
    for rec in records:
        kind = rec.get("type")
        if kind == "hazard" or (kind == "crash" and rec.get("requires_grad", True)):
            key = (kind, rec["filename"], rec["line"])
            if key not in seen:
                seen[key] = dict(rec, count=1)
            else:
                seen[key]["count"] += 1
    return list(seen.values())
