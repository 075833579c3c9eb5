"""The ``meshopt-batch report``: sections, figures and the HTML / Markdown writers."""

from .build import build_report
from .scope import SCOPES, Scope, get_scope

__all__ = ["SCOPES", "Scope", "build_report", "get_scope"]
