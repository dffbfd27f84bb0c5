"""The ``local`` provider: a GGUF file on this machine, served on loopback, called as OpenAI.

Everything past the server is the OpenAI client unchanged -- retries, deadlines,
the call cache, the recording proxies that count costs -- because the server
(``llama_cpp.server``) speaks the OpenAI Chat Completions API and applies the
chat template stored in the GGUF file. What the client adds is what makes a
local run reproducible and traceable: the file's SHA-256 and the runtime's name
and version (:attr:`LocalClient.weights`, part of the run identity and the
manifest, and of every cache key), and a fixed seed sent with every request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from typing_extensions import NotRequired, TypedDict, Unpack

from himga.llm._cache import LLMCache
from himga.llm._gguf import check_gguf, gguf_sha256
from himga.llm._local_server import RUNTIME, ServerSettings, runtime_version, serve
from himga.llm._openai import OpenAIClient
from himga.llm._protocol import ChatMessage

__all__ = ["DEFAULT_CONTEXT", "DEFAULT_SEED", "DEFAULT_THREADS", "LocalClient"]

#: CPU threads per model: one, since on a shared machine one thread per model measured
#: faster than two (docs/llm.md); more models (Ray workers) use the other cores.
DEFAULT_THREADS: Final = 1
#: Context window in tokens: room for LoCoMo's answer prompt with the top retrieved turns.
DEFAULT_CONTEXT: Final = 4096
DEFAULT_SEED: Final = 0


class ClientSettings(TypedDict):
    """The :class:`~himga.llm.SDKClient` settings a local client passes on unchanged."""

    max_concurrency: int
    max_retries: int
    timeout: float
    temperature: float | None
    max_tokens: int
    cache: NotRequired[str | os.PathLike[str] | LLMCache | None]


class LocalClient(OpenAIClient):
    """A GGUF model served by ``python -m llama_cpp.server`` on loopback.

    ``model`` is the path of the GGUF file. Without ``base_url`` the client uses
    this process's server of the file and settings, started if need be
    (:func:`himga.llm._local_server.serve`, stopped when the process ends); with
    one it calls the server there (e.g. a recording proxy in front of that server).
    ``threads`` (CPU threads), ``context`` (tokens) and ``seed`` configure the
    server; the seed is also sent with every request, so a reply does not depend
    on the order of requests. Raises :class:`~himga._extras.MissingExtraError`
    without the ``local`` extra and
    :class:`~himga.llm._gguf.LocalModelError` when the file is missing, not GGUF,
    or cannot be loaded.
    """

    provider: ClassVar[str] = "local"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        threads: int = DEFAULT_THREADS,
        context: int = DEFAULT_CONTEXT,
        seed: int = DEFAULT_SEED,
        **settings: Unpack[ClientSettings],
    ) -> None:
        version = runtime_version()
        file = check_gguf(model)
        self.threads = threads
        self.context = context
        self.seed = seed
        self._weights = {
            "file": str(file),
            "sha256": gguf_sha256(file),
            "size": file.stat().st_size,
            "runtime": RUNTIME,
            "runtime_version": version,
            "context": context,
            "seed": seed,
        }
        if base_url is None:
            base_url = serve(ServerSettings(file, threads, context, seed)).base_url
        # The server asks for no key; the SDK wants a non-empty one.
        super().__init__(api_key="local", model=str(file), base_url=base_url, **settings)

    @property
    def weights(self) -> Mapping[str, Any]:
        """The model file (path, SHA-256, size), the runtime (name, version) and the
        settings that change a reply (context, seed)."""
        return dict(self._weights)

    def _request(self, messages: Sequence[ChatMessage], max_tokens: int) -> dict[str, Any]:
        request = super()._request(messages, max_tokens)
        request["seed"] = self.seed
        return request

    def _cache_settings(self, max_tokens: int) -> dict[str, Any]:
        # Another file at the same path, or another runtime, answers differently.
        settings = super()._cache_settings(max_tokens)
        settings["weights"] = {k: v for k, v in self._weights.items() if k not in ("file",)}
        return settings
