"""Reading a profile JSON file (``--profile FILE.json``): every key and type checked first.

The file is one JSON object with the fields of :class:`~meshopt_batch.model.profiles.Profile`
(what ``meshopt-batch probe --save-profile`` writes)::

    {"name": "mygpu", "max_size": 96, "max_uniques": 32, "memory": "lookback",
     "memory_size": 42, "boundary_16bit": false, "description": "...", "source": "..."}

``name``, ``max_size``, ``max_uniques``, ``memory`` and ``memory_size`` are required, the
others optional.  Refused, with one line naming the file and the JSON pointer: a file that is
not a JSON object, an unknown key (a typo would otherwise be ignored silently), a missing
key, a value of the wrong type (``"96"`` where a whole number belongs), a bound over
:data:`~meshopt_batch.support.limits.MAX_PROFILE_SIZE`, and whatever the profile itself refuses
(an unknown memory kind, a batch too small for one triangle).

The field list and types are read from the dataclass given, so a field added to the profile
is accepted here without a second table.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ..support.errors import MeshoptBatchError
from ..support.json_values import describe, pointer
from ..support.limits import MAX_PROFILE_SIZE

__all__ = ["load_profile_file"]

_TYPE_WORDS = {"int": "a whole number", "str": "a string", "bool": "true or false"}


def _check_value(value: Any, kind: str, where: str) -> None:
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not 0 <= value <= MAX_PROFILE_SIZE:
            raise MeshoptBatchError(f"{where}: {value} outside 0..{MAX_PROFILE_SIZE:,}")
    elif kind == "str":
        ok = isinstance(value, str)
    elif kind == "bool":
        ok = isinstance(value, bool)
    else:
        ok = True
    if not ok:
        raise MeshoptBatchError(f"{where}: expected {_TYPE_WORDS[kind]}, got {describe(value)}")


def load_profile_file(path: str | Path, profile_class):
    """The profile of a JSON file, built with ``profile_class.from_dict`` after every key and
    type of the file was checked (see the module docstring).

    Raises
    ------
    MeshoptBatchError
        One line: ``<file>: <JSON pointer>: <what was expected>``.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MeshoptBatchError(f"{path}: cannot read the profile file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise MeshoptBatchError(f"{path}: not a profile file (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MeshoptBatchError(f"{path}: not a profile file (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise MeshoptBatchError(f"{path}: not a profile file (JSON nested too deeply)") from None
    if not isinstance(data, dict):
        raise MeshoptBatchError(f"{path}: expected a JSON object (a profile), got {describe(data)}")
    fields = {f.name: str(f.type) for f in dataclasses.fields(profile_class)}
    required = [f.name for f in dataclasses.fields(profile_class)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    try:
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise MeshoptBatchError(f"{pointer(unknown[0])}: unknown key (known: {', '.join(fields)})")
        missing = [name for name in required if name not in data]
        if missing:
            raise MeshoptBatchError(f"missing key {missing[0]!r} (required: {', '.join(required)})")
        for name, value in data.items():
            _check_value(value, fields[name], pointer(name))
        return profile_class.from_dict(data)
    except MeshoptBatchError as exc:
        raise MeshoptBatchError(f"{path}: {exc}") from None
