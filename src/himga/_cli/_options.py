"""Option types more than one command parses alike (``--memory-timeout``'s is
:func:`himga.eval._memory_calls.memory_timeout_argument`, shared with the pytest plugin)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["add_judge_options", "judge_base_url_error", "path"]

# The longest file name (one path component) Linux, macOS and Windows file systems hold.
_NAME_MAX = 255

_JUDGE_SERVER_HELP = (
    "the judge's OpenAI- or Anthropic-compatible server (default: the provider's "
    "environment variable)"
)


def path(text: str) -> Path:
    """A file or directory argument for argparse: refused in one line when no file system
    could hold it -- empty, a NUL, a lone surrogate that the file-system encoding cannot write, or
    a component longer than 255 bytes -- which every operation on it would otherwise fail
    with a ``ValueError``, ``UnicodeEncodeError`` or ``OSError``."""
    if not text:
        raise argparse.ArgumentTypeError("an empty string is not a file name")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a file name: it holds a NUL character")
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a file name: {exc.object[exc.start : exc.end]!r} at position "
            f"{exc.start} cannot be encoded ({exc.reason})"
        ) from None
    for part in Path(text).parts:
        if len(os.fsencode(part)) > _NAME_MAX:
            raise argparse.ArgumentTypeError(
                f"{part[:40]}...: a file name of {len(os.fsencode(part))} bytes (at most "
                f"{_NAME_MAX})"
            )
    return Path(text)


def add_judge_options(
    parser: Any,
    *,
    llm_help: str,
    model_help: str,
    required: bool = True,
    choices: Sequence[str] | None = None,
    model_metavar: str = "M",
    base_url_help: str = _JUDGE_SERVER_HELP,
    prompt_help: str | None = None,
) -> None:
    """The options that name a judge, alike in every command that asks one:
    ``--judge-llm PROVIDER``, ``--judge-model``, ``--judge-base-url URL`` and, when
    ``prompt_help`` is given, ``--judge-prompt NAME`` (default ``official``). The help
    texts say what each means to the command; ``parser`` is an argparse parser or group.
    """
    parser.add_argument(
        "--judge-llm", required=required, choices=choices, metavar="PROVIDER", help=llm_help
    )
    parser.add_argument("--judge-model", default=None, metavar=model_metavar, help=model_help)
    parser.add_argument("--judge-base-url", default=None, metavar="URL", help=base_url_help)
    if prompt_help is not None:
        parser.add_argument("--judge-prompt", default="official", metavar="NAME", help=prompt_help)


def judge_base_url_error(url: str | None) -> str | None:
    """The usage error of a ``--judge-base-url`` that is no http(s) URL; ``None`` when fine."""
    if url is not None and not (urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc):
        return f"--judge-base-url must be an http:// or https:// URL, got {url!r}"
    return None
