"""Texts for runtime records (no torch import here)."""

from __future__ import annotations

import os


def _tensor_text(rec: dict) -> str:
    many = rec.get("tensors") or ()
    if len(many) > 1:
        what = "Parameters" if all(t.get("parameter") for t in many) else "tensors"
        names = [f"`{t['name']}`" if t.get("name") else f"one of shape {tuple(t.get('shape') or ())}" for t in many]
        shown = ", ".join(names[:MAX_NAMES])
        if len(names) > MAX_NAMES:
            shown += f" and {len(names) - MAX_NAMES} more"
        return f"{len(many)} real requires-grad {what} ({shown})"
    what = "Parameter" if rec.get("parameter") else "tensor"
    shape = tuple(rec.get("shape") or ())
    name = rec.get("name")
    named = f" `{name}`" if name else ""
    return f"real requires-grad {what}{named} of shape {shape}"


MAX_NAMES = 4  # tensors named in one message; the rest are counted


def add_tensor(event: dict, rec: dict) -> None:
    """Merge the tensor of ``rec`` into ``event["tensors"]`` (distinct tensors
    by name, shape and kind, in order), so a message says how many were affected."""
    tensors = event.setdefault("tensors", [])
    entry = {"name": rec.get("name"), "shape": list(rec.get("shape") or ()), "parameter": bool(rec.get("parameter"))}
    if entry not in tensors:
        tensors.append(entry)


def _its(rec: dict) -> str:
    return "their" if len(rec.get("tensors") or ()) > 1 else "its"


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
    plural = len(rec.get("tensors") or ()) > 1
    if rec.get("returned"):
        them = "them" if plural else "it"
        return f"{_tensor_text(rec)} entered fake ops here; {sink} returned a FakeTensor gradient for {them}"
    if not rec.get("entry_seen", True):
        return f"{_tensor_text(rec)} {'have' if plural else 'has'} a FakeTensor .grad after {sink}"
    return f"{_tensor_text(rec)} entered fake ops here; {_its(rec)} .grad became a FakeTensor after {sink}"


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
            add_tensor(seen[key], rec)
    return list(seen.values())
