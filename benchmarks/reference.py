"""The stored reference the benchmarks compare the default order against (``write_reference.py``)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["load_reference"]

FOLDER = Path(__file__).resolve().parent / "reference"


def load_reference(kind: str) -> dict:
    """``{"commit", "kind", "rows"}`` of the one ``reference/<kind>_<commit>.json`` (``portable``
    rows or ``assets``); an empty reference where there is none."""
    found = sorted(FOLDER.glob(f"{kind}_*.json"))
    if len(found) != 1:
        return {"commit": "none", "kind": kind, "rows": {}}
    return json.loads(found[0].read_text())
