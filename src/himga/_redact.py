"""Secret redaction of the free text a run records: error messages and LLM replies.

Applied where such text is recorded (a result's ``error``, ``prediction`` and
memory error, a judge error, a printed error line, a reply the LLM cache
stores), never to a whole output
file: the values of fields himga itself writes -- names, ids, numbers, JSON
keys -- are never rewritten. Three things are redacted:

* the value of each of :data:`SECRET_ENV` that is set and at least
  :data:`MIN_SECRET_LENGTH` characters long (a shorter value -- ``1``,
  ``fake``, ``test`` -- is no provider's key and cannot be told from ordinary
  text, so replacing it would only corrupt the text);
* credentials in URL query strings (``?api-key=...``, ``&token=...``);
* credentials in header lines (``Authorization: Bearer ...``, ``x-api-key: ...``).
"""

from __future__ import annotations

import os
import re

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "SECRET_ENV", "redact"]

#: Environment variables holding credentials: their values never reach an output.
SECRET_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN")
#: Shorter values of :data:`SECRET_ENV` are not redacted (see the module docstring).
MIN_SECRET_LENGTH = 8
#: What a redacted secret is replaced with.
REDACTED = "***"

_CREDENTIAL = r"(?:api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature)"
_QUERY = re.compile(rf"([?&]{_CREDENTIAL}=)[^&#\s'\"]+", re.IGNORECASE)
# A header as printed (``Authorization: Bearer x``) or in a dict repr (``'x-api-key': 'x'``).
_HEADER = re.compile(
    r"(\b(?:proxy-)?(?:authorization|x-api-key|api-key)['\"]?\s*:\s*['\"]?"
    r"(?:bearer\s+|basic\s+)?)[^\s'\",;)}\]]+",
    re.IGNORECASE,
)
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s@]+@", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every secret it holds replaced by :data:`REDACTED` (module docstring)."""
    for name in SECRET_ENV:
        secret = os.environ.get(name)
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    text = _QUERY.sub(rf"\1{REDACTED}", text)
    text = _HEADER.sub(rf"\1{REDACTED}", text)
    return _USERINFO.sub(rf"\1{REDACTED}@", text)
