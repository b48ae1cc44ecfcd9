"""Wheels rebuilt from the distributions installed in the running interpreter.

pre-commit builds its hook environment with ``pip install .``; offline, pip can
only take wheels from a local folder. This module makes that folder from what
the test environment itself has installed (the same files, repacked as wheels
with a fresh ``RECORD``), so the hook environment never depends on what the
base interpreter happens to have nor on a package index.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def repack(dist: metadata.Distribution, dest: Path) -> Path:
    """Write ``dist`` (an installed distribution) as a wheel into ``dest``."""
    name = dist.metadata["Name"]
    version = dist.version
    dist_info = None
    members: list[tuple[str, Path]] = []
    for f in dist.files or []:
        rel = str(f).replace("\\", "/")
        if rel.startswith("../") or "__pycache__/" in rel or rel.endswith(".pyc"):
            continue  # scripts outside site-packages (pip regenerates them), bytecode
        if rel.split("/")[0].endswith(".dist-info"):
            dist_info = rel.split("/")[0]
            if rel.rsplit("/", 1)[-1] in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
        path = Path(dist.locate_file(f))
        if path.is_file():
            members.append((rel, path))
    if dist_info is None:
        raise ValueError(f"{name}: no .dist-info in its RECORD")
    wheel_meta = Path(dist.locate_file(f"{dist_info}/WHEEL")).read_text(encoding="utf-8")
    tags = re.findall(r"^Tag:\s*(\S+)", wheel_meta, flags=re.MULTILINE)
    tag = tags[0] if tags else "py3-none-any"
    stem = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    out = dest / f"{stem}-{tag}.whl"
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, path in members:
            data = path.read_bytes()
            zf.writestr(rel, data)
            record.append(f"{rel},{_record_hash(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        zf.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return out


def _requirements(dist: metadata.Distribution) -> list[str]:
    from packaging.requirements import Requirement

    names = []
    for spec in dist.requires or []:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        names.append(req.name)
    return names


def build(dest: Path, roots: list[str]) -> list[Path]:
    """Wheels for ``roots`` and everything they require (as installed here)."""
    dest.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    todo = list(roots)
    wheels = []
    while todo:
        name = todo.pop()
        if _norm(name) in seen:
            continue
        seen.add(_norm(name))
        dist = metadata.distribution(name)
        wheels.append(repack(dist, dest))
        todo.extend(_requirements(dist))
    return wheels
