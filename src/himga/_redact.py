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

A memory's constructor arguments and ``repr`` are recorded too (manifest, checkpoint
header, report): :func:`redact_arguments` and :func:`redact_repr` replace each secret
they carry by a fingerprint, so a resume still tells a changed key from the same one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_ENV",
    "fingerprint",
    "redact",
    "redact_arguments",
    "redact_repr",
    "secret_name",
]

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


# -- memory arguments ------------------------------------------------------------------

# A constructor argument is a secret when its name ends in one of these words
# (``llm_api_key``, ``access_token``, ``db_password``) or holds one of the second
# set anywhere (``secret_name``); ``key_field``, ``max_tokens`` are not.
_SECRET_LAST = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "credential", "credentials"}
)
_SECRET_ANY = frozenset({"secret", "password", "passwd", "apikey", "credential", "credentials"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# Provider keys by their prefix (OpenAI ``sk-``, ``sk-proj-``; Anthropic ``sk-ant-``).
_PROVIDER_KEY = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}")
# ``name=value`` (a dataclass repr) or ``'name': value`` (a dict's).
_ASSIGNMENT = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<sep>['"]?\s*[=:]\s*)"""
    r"""(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,)\s}\]{\[(][^,)\s}\]]*)"""
)


def secret_name(name: str) -> bool:
    """Whether an argument called ``name`` holds a credential (see the rules above)."""
    words = [word.lower() for word in _WORD.findall(name)]
    return bool(words) and (words[-1] in _SECRET_LAST or not _SECRET_ANY.isdisjoint(words))


def fingerprint(value: Any) -> str:
    """``*** sha256:<16 hex>``: a secret as it is recorded. Nothing of it can be read
    back, yet two records of one run tell a changed secret from the same one."""
    material = json.dumps(value, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(b"himga secret\0" + material).hexdigest()[:16]
    return f"{REDACTED} sha256:{digest}"


def redact_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A memory's constructor ``arguments`` as a run records them (manifest, checkpoint
    header, report, printed hints): the value of each argument named like a secret
    (:func:`secret_name`), at any depth of a nested mapping (a ``config`` dict), is its
    :func:`fingerprint`; a string holding a credential (a provider key, a URL with a
    password or an ``api-key=`` query, a key of the environment) is redacted with its
    fingerprint appended. Everything else is kept as given."""
    return {name: _argument(name, value) for name, value in arguments.items()}


def _argument(name: str, value: Any) -> Any:
    if secret_name(name) and value not in (None, ""):
        return fingerprint(value)
    if isinstance(value, Mapping):
        return {key: _argument(str(key), item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_argument("", item) for item in value]
    if isinstance(value, str):
        cleaned = _PROVIDER_KEY.sub(REDACTED, redact(value))
        return value if cleaned == value else f"{cleaned} ({fingerprint(value)})"
    return value


def redact_repr(text: str) -> str:
    """A memory's ``repr`` as a run records it: each ``name=value`` or ``'name': value``
    whose name is a secret's gets the value's :func:`fingerprint` (quoted), and the rest
    is :func:`redact`-ed, provider keys included."""

    def replace(match: re.Match[str]) -> str:
        if not secret_name(match["name"]) or match["value"] in ("None", "''", '""'):
            return match[0]
        return f"{match['name']}{match['sep']}{fingerprint(match['value'])!r}"

    return _PROVIDER_KEY.sub(REDACTED, redact(_ASSIGNMENT.sub(replace, text)))
