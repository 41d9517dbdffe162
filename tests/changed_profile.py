"""Device profiles of one's own: the shipped lavapipe profile with some fields changed."""

from __future__ import annotations

import json
from pathlib import Path

import dmlpy as dml


def cpu_profile(tmp_path: Path, name: str, **changes) -> Path:
    """The shipped lavapipe profile named `name`, with `changes` (`denormals="flush"`,
    `subgroupSize=4`), as a file under tmp_path to pass to create_device(profile=...)."""
    text = (Path(dml.__file__).parent / "profiles" / "lavapipe.json").read_text()
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**json.loads(text), "name": name, **changes}))
    return path
