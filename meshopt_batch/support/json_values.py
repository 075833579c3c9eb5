"""Naming JSON values and places in one-line messages: what a value is, where it sits.

Places are JSON pointers (RFC 6901: ``/meshes/0/primitives/1/mode``), the form the Khronos
glTF validator uses; values are shown as their JSON type and at most 40 characters of their
JSON text.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["describe", "pointer"]


def pointer(*parts: str | int) -> str:
    """The JSON pointer of ``parts`` (``~`` and ``/`` in keys escaped as RFC 6901 says)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _text(value: Any) -> str:
    try:
        text = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe(value: Any) -> str:
    """``value`` in words for "expected X, got Y": ``null``, ``the string "12"``,
    ``the number 1e+39``, ``an array [1, 2]``, ``an object {"a": 1}``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {_text(value)}"
    if isinstance(value, str):
        return f"the string {_text(value)}"
    if isinstance(value, list):
        return f"an array {_text(value)}"
    if isinstance(value, dict):
        return f"an object {_text(value)}"
    return type(value).__name__
