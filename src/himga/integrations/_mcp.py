"""Any MCP memory server as a himga memory, through the official ``mcp`` Python SDK."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import json
import logging
import math
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from himga._extras import require
from himga.data.schema import Message, Session
from himga.integrations._errors import IntegrationConfigError, IntegrationError
from himga.memory._protocol import Hit
from himga.memory._text import ENGLISH_STOPWORDS, format_line, words

__all__ = ["MCP_PRESETS", "MCPMemory"]

_PURPOSE = "MCPMemory"
_SERVER_MEMORY_SCRIPT = Path("node_modules/@modelcontextprotocol/server-memory/dist/index.js")
# integrations/mcp-node/ of a himga checkout, where `npm ci` installs the pinned servers.
_CHECKOUT_NODE_DIR = Path(__file__).resolve().parents[3] / "integrations" / "mcp-node"
NODE_DIR_ENV = "HIMGA_MCP_NODE_DIR"

#: Settings of known servers, selected by ``preset``; any setting given explicitly wins.
#: ``server-memory`` is npm ``@modelcontextprotocol/server-memory``, the reference
#: knowledge-graph memory: one entity per turn, its prompt line the only observation.
MCP_PRESETS: Mapping[str, Mapping[str, Any]] = {
    "server-memory": {
        "command": "node",
        "env": {"MEMORY_FILE_PATH": "{state_dir}/memory.jsonl"},
        "ingest_tool": "create_entities",
        "ingest_args": {
            "entities": [{"name": "{key}", "entityType": "turn", "observations": ["{line}"]}]
        },
        "search_tool": "search_nodes",
        "search_args": {"query": "{query}"},
        "reset_tool": "delete_entities",
        "reset_args": {"entityNames": "{keys}"},
        "results": "entities",
        "key_field": "name",
        "text_field": "observations",
        # search_nodes keeps an entity only if the whole query is a substring of it.
        "split_query": True,
    },
}

_INGEST_FIELDS = ("key", "line", "content", "role", "turn_id", "session_id", "date")
_SETTINGS = (
    "ingest_tool",
    "ingest_args",
    "search_tool",
    "search_args",
    "results",
    "key_field",
    "text_field",
)
_PROCESS_NONCE = uuid.uuid4().hex[:6]
_INSTANCES = itertools.count(1)


def _server_memory_version(script: str) -> str:
    manifest = Path(script).parents[1] / "package.json"
    return str(json.loads(manifest.read_text("utf-8"))["version"])


def _server_memory_script() -> str:
    directory = Path(os.environ.get(NODE_DIR_ENV, _CHECKOUT_NODE_DIR))
    script = directory / _SERVER_MEMORY_SCRIPT
    if not script.is_file():
        raise IntegrationConfigError(
            f"the reference MCP memory server is not installed: {script} is missing. "
            f"In a himga checkout run `npm ci --prefix integrations/mcp-node`; elsewhere set "
            f"{NODE_DIR_ENV} to a directory where `npm install "
            f"@modelcontextprotocol/server-memory` was run, or give command= and args="
        )
    return str(script)


def _fill(template: Any, values: Mapping[str, Any], setting: str) -> Any:
    """``template`` with ``{name}`` placeholders in its strings replaced from ``values``.

    A string that is exactly one placeholder becomes the value itself (a list of
    keys stays a list); inside longer strings values are formatted as text.
    """
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        try:
            return template.format_map(values)
        except (KeyError, IndexError, ValueError) as exc:
            known = ", ".join("{" + name + "}" for name in values)
            raise IntegrationConfigError(
                f"MCPMemory setting {setting}: bad placeholder in {template!r} ({exc!r}); "
                f"known placeholders: {known}"
            ) from exc
    if isinstance(template, Mapping):
        return {key: _fill(value, values, setting) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(value, values, setting) for value in template]
    return template


_SESSIONS = itertools.count(1)
_THREAD_PREFIX = "himga-mcp-"
_log = logging.getLogger("himga.integrations")


class _SDKLogTally(logging.Filter):
    """Keeps the MCP SDK's stdio transport records of a himga session off the terminal.

    The SDK logs a full traceback for every stdout line of the server that is not an
    MCP message: a server printing garbage floods stderr with megabytes. A record
    logged on a session's thread is counted instead, its first one kept as one line
    for the session's errors and said once on the ``himga.integrations`` logger.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._tally: dict[str, tuple[int, str]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        thread = record.threadName or ""
        if not thread.startswith(_THREAD_PREFIX):
            return True
        first = record.getMessage()
        if record.exc_info is not None and record.exc_info[1] is not None:
            first += f": {' '.join(str(record.exc_info[1]).split())}"
        first = first[:300]
        with self._lock:
            count, kept = self._tally.get(thread, (0, first))
            self._tally[thread] = (count + 1, kept)
        if count == 0:
            _log.warning(
                "MCP server %s: %s (further such lines are counted, not shown)",
                " ".join(thread.split()[1:]),
                first,
            )
        return False

    def summary(self, thread: str) -> str:
        """``"; the MCP SDK could not read N lines of its output, the first: ..."``, or ``""``."""
        with self._lock:
            count, first = self._tally.get(thread, (0, ""))
        if not count:
            return ""
        return f"; the MCP SDK could not read {count} line(s) of its output, the first: {first}"

    def forget(self, thread: str) -> None:
        with self._lock:
            self._tally.pop(thread, None)


_SDK_LOG = _SDKLogTally()
# The SDK's stdio transport logs under its module's name (mcp/client/stdio.py).
logging.getLogger("mcp.client.stdio").addFilter(_SDK_LOG)


class _ToolSession:
    """One MCP client connection, driven by its own thread and event loop.

    The SDK's client must be entered and exited in one task: a single task on the
    thread's loop holds ``async with Client(...)`` and serves tool calls from a
    queue, so any thread may call :meth:`call` and :meth:`close` exits the client
    in the task that entered it.
    """

    def __init__(self, target: Any, what: str, timeout: float, errlog: Path | None) -> None:
        self.what = what
        self.timeout = timeout
        self._errlog = errlog
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever,
            name=f"{_THREAD_PREFIX}{next(_SESSIONS)} {what}",
            daemon=True,
        )
        self._thread.start()
        ready: concurrent.futures.Future[asyncio.Queue[Any]] = concurrent.futures.Future()
        self._served = asyncio.run_coroutine_threadsafe(self._serve(target, ready), self._loop)
        try:
            self._queue = ready.result(timeout)
        except BaseException as exc:
            detail = self._stderr()  # before the loop stops and its tally is forgotten
            self._stop_loop()
            reason = (
                f"no MCP handshake in {timeout} s"
                if isinstance(exc, TimeoutError)
                else f"{type(exc).__name__}: {exc}"
            )
            raise IntegrationError(
                f"cannot connect to the MCP server {what}: {reason}{detail}"
            ) from exc

    async def _serve(
        self, target: Any, ready: concurrent.futures.Future[asyncio.Queue[Any]]
    ) -> None:
        client_module: Any = require("mcp.client", extra="mcp", purpose=_PURPOSE)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        try:
            async with client_module.Client(target, cache=None) as client:
                ready.set_result(queue)
                while (request := await queue.get()) is not None:
                    name, arguments, answer = request
                    try:
                        answer.set_result(await client.call_tool(name, arguments))
                    except Exception as exc:
                        answer.set_exception(exc)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """The ``CallToolResult`` of one tool call; :class:`IntegrationError` if it fails."""
        answer: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if self._served.done():
            raise IntegrationError(f"the MCP server {self.what} has gone away{self._stderr()}")
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (name, arguments, answer))
        try:
            result = answer.result(self.timeout)
        except concurrent.futures.TimeoutError as exc:
            raise IntegrationError(
                f"MCP tool {name!r} of {self.what} did not answer in {self.timeout} s"
            ) from exc
        except Exception as exc:
            raise IntegrationError(
                f"MCP tool {name!r} of {self.what} failed: {type(exc).__name__}: {exc}"
                f"{self._stderr()}"
            ) from exc
        if result.is_error:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            raise IntegrationError(f"MCP tool {name!r} of {self.what} returned an error: {text}")
        return result

    def close(self) -> None:
        """Exit the client in its own task (stopping a stdio server), then stop the thread."""
        if not self._served.done():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
            # The connection is being dropped anyway; its error was raised to any caller.
            with contextlib.suppress(Exception):
                self._served.result(self.timeout)
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout)
        if not self._thread.is_alive():
            self._loop.close()
            _SDK_LOG.forget(self._thread.name)

    def _stderr(self) -> str:
        unread = _SDK_LOG.summary(self._thread.name)
        if self._errlog is None or not self._errlog.is_file():
            return unread
        tail = self._errlog.read_text("utf-8", "replace").strip()[-2000:]
        return f"{unread}; the server's stderr ends: {tail}" if tail else unread


class _SessionPool:
    """One connection per distinct server configuration in this process, made on first use.

    Sharing keeps a memory cheap to create (a stdio server costs a spawn and a
    handshake, 0.3-0.4 s); instances stay apart because each names its own entities
    and keeps only those among the results.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _ToolSession] = {}
        self._directories: list[str] = []
        atexit.register(self.close)

    def get(self, config: Mapping[str, Any], timeout: float) -> _ToolSession:
        identity = json.dumps(config, sort_keys=True)
        with self._lock:
            session = self._sessions.get(identity)
            if session is None or session._served.done():
                session = self._connect(config, timeout)
                self._sessions[identity] = session
            return session

    def _connect(self, config: Mapping[str, Any], timeout: float) -> _ToolSession:
        if config["url"] is not None:
            return _ToolSession(config["url"], repr(config["url"]), timeout, None)
        stdio: Any = require("mcp.client.stdio", extra="mcp", purpose=_PURPOSE)
        state_dir = tempfile.mkdtemp(prefix="himga-mcp-")
        self._directories.append(state_dir)
        command = config["command"]
        if shutil.which(command) is None:
            raise IntegrationError(f"cannot start the MCP server: {command!r} is not on PATH")
        env = _fill(config["env"], {"state_dir": state_dir}, "env")
        parameters = stdio.StdioServerParameters(command=command, args=config["args"], env=env)
        errlog = Path(state_dir) / "stderr.log"
        # The transport (not the parameters) is handed to the client so the server's
        # stderr goes to a file, quoted when something fails, instead of the terminal.
        stream = errlog.open("w", encoding="utf-8")
        what = " ".join([command, *config["args"]])
        return _ToolSession(stdio.stdio_client(parameters, errlog=stream), what, timeout, errlog)

    def close(self) -> None:
        with self._lock:
            for session in self._sessions.values():
                session.close()
            self._sessions.clear()
            for directory in self._directories:
                shutil.rmtree(directory, ignore_errors=True)
            self._directories.clear()


_POOL = _SessionPool()


class MCPMemory:
    """A memory server spoken to over MCP: each turn stored with one tool call, queries
    answered by another, as configured.

    The transport is stdio (``command`` and ``args``, ``env`` merged over the SDK's
    default environment) or streamable HTTP (``url``). Tool names and arguments are
    configuration: ``ingest_tool`` gets ``ingest_args`` with the placeholders
    ``{key}`` (a name unique to this turn, made by the adapter), ``{line}`` (``"[<date>]
    <speaker>: <content>"``), ``{content}``, ``{role}``, ``{turn_id}``,
    ``{session_id}``, ``{date}``; ``search_tool`` gets ``search_args`` with
    ``{query}`` and ``{k}``; ``reset_tool`` (optional) gets ``reset_args`` with
    ``{keys}``, the list of keys this instance stored since its last reset.
    ``env`` may hold ``{state_dir}``, a fresh temporary directory per server. A
    string that is one placeholder becomes the value itself (``"{keys}"`` a list).

    A search result is read from the tool's structured content (or its text, parsed
    as JSON): ``results`` names the list of items in it, ``key_field`` the item's
    key, ``text_field`` its text (a list is joined). Items whose key this instance
    did not store since its last reset are dropped, so each hit maps back to the
    turn it came from. With ``split_query`` the query is searched term by term (its
    distinct words, stopwords left out; the whole query if none remain) and an item
    scores the sum over the terms that found it of ``log((N + 1) / df)``, ``N`` the
    items held and ``df`` how many the term found (a term every entity matches
    counts for almost nothing); otherwise the server's order is kept, scored
    ``1 / rank``. Equal scores keep the order items were first returned in.

    ``preset`` (default ``"server-memory"``, see :data:`MCP_PRESETS`) fills every
    setting not given; ``preset=None`` requires all of them. One connection per
    distinct server configuration is shared by the instances of a process (see
    :class:`_SessionPool`); without a ``reset_tool``, ``reset`` only forgets the
    keys, and the server's old entities never surface again. Server failures raise
    :class:`~himga.integrations.IntegrationError`.

    Needs the ``mcp`` extra; the ``server-memory`` preset needs Node.js and the
    pinned server (``npm ci --prefix integrations/mcp-node``).
    """

    NEEDS: ClassVar[str] = "Node.js (its MCP server)"
    COLD_START: ClassVar[str] = "starts a Node.js server per instance (about a second)"

    def __init__(
        self,
        k: int = 10,
        *,
        preset: str | None = "server-memory",
        command: str | None = None,
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        url: str | None = None,
        ingest_tool: str | None = None,
        ingest_args: Mapping[str, Any] | None = None,
        search_tool: str | None = None,
        search_args: Mapping[str, Any] | None = None,
        reset_tool: str | None = None,
        reset_args: Mapping[str, Any] | None = None,
        results: str | None = None,
        key_field: str | None = None,
        text_field: str | None = None,
        split_query: bool | None = None,
        timeout: float = 30.0,
    ) -> None:
        if k < 1:
            raise IntegrationConfigError(f"MCPMemory: k must be >= 1, got {k}")
        if preset is not None and preset not in MCP_PRESETS:
            raise IntegrationConfigError(
                f"MCPMemory: unknown preset {preset!r}; known: {', '.join(MCP_PRESETS)} or None"
            )
        require("mcp", extra="mcp", purpose=_PURPOSE)
        given: dict[str, Any] = {
            "command": command,
            "args": None if args is None else list(args),
            "env": None if env is None else dict(env),
            "ingest_tool": ingest_tool,
            "ingest_args": ingest_args,
            "search_tool": search_tool,
            "search_args": search_args,
            "reset_tool": reset_tool,
            "reset_args": reset_args,
            "results": results,
            "key_field": key_field,
            "text_field": text_field,
            "split_query": split_query,
        }
        defaults = MCP_PRESETS[preset] if preset is not None else {}
        settings: dict[str, Any] = {
            name: defaults.get(name) if value is None else value for name, value in given.items()
        }
        missing = [name for name in _SETTINGS if settings[name] is None]
        if url is None and settings["command"] is None:
            missing.insert(0, "command (or url)")
        if missing:
            raise IntegrationConfigError(f"MCPMemory: missing settings: {', '.join(missing)}")
        if settings["reset_tool"] is not None and settings["reset_args"] is None:
            raise IntegrationConfigError("MCPMemory: reset_tool is given without reset_args")
        # What the run manifest shows of the server: its package and version rather than
        # this machine's path to it, so runs on two checkouts have the same identity.
        self.server = url or " ".join([settings["command"], *(settings["args"] or [])])
        if url is None and settings["args"] is None:
            settings["args"] = []
            if preset == "server-memory":
                script = _server_memory_script()
                settings["args"] = [script]
                version = _server_memory_version(script)
                self.server = f"npm @modelcontextprotocol/server-memory@{version}"
        # Every template is checked now, with stand-in values, not at the first call.
        _fill(settings["ingest_args"], dict.fromkeys(_INGEST_FIELDS, ""), "ingest_args")
        _fill(settings["search_args"], {"query": "", "k": 1}, "search_args")
        _fill(settings["reset_args"], {"keys": []}, "reset_args")
        self.k = k
        self.preset = preset
        self.timeout = timeout
        self._settings = settings
        self._server = {
            "url": url,
            "command": settings["command"],
            "args": settings["args"],
            "env": settings["env"] or {},
        }
        self._prefix = f"turn-{_PROCESS_NONCE}-{next(_INSTANCES)}-"
        self._counter = itertools.count(1)
        self._turns: dict[str, str | None] = {}

    def __repr__(self) -> str:
        # Parameters only, never content: the run checkpoint and manifest record it.
        return (
            f"MCPMemory(k={self.k}, preset={self.preset!r}, server={self.server!r}, "
            f"search_tool={self._settings['search_tool']!r}, "
            f"split_query={bool(self._settings['split_query'])})"
        )

    def _call(self, tool: str, arguments: Any) -> Any:
        return _POOL.get(self._server, self.timeout).call(tool, arguments)

    def ingest(self, message: Message, session: Session, /) -> None:
        """One call of ``ingest_tool`` for the turn, under a key new to the server."""
        key = f"{self._prefix}{next(self._counter)}"
        values = {
            "key": key,
            "line": format_line(message, session),
            "content": message.content,
            "role": message.role,
            "turn_id": message.turn_id or "",
            "session_id": session.session_id,
            "date": session.date_str or "",
        }
        self._call(
            self._settings["ingest_tool"],
            _fill(self._settings["ingest_args"], values, "ingest_args"),
        )
        self._turns[key] = message.turn_id

    def _items(self, query: str, k: int) -> list[tuple[str, str]]:
        result = self._call(
            self._settings["search_tool"],
            _fill(self._settings["search_args"], {"query": query, "k": k}, "search_args"),
        )
        payload = result.structured_content
        if payload is None:
            text = "".join(getattr(block, "text", "") for block in result.content)
            try:
                payload = json.loads(text)
            except json.JSONDecodeError as exc:
                raise IntegrationError(
                    f"MCP tool {self._settings['search_tool']!r} answered neither structured "
                    f"content nor JSON text: {text[:200]!r}"
                ) from exc
        for part in self._settings["results"].split("."):
            payload = payload.get(part) if isinstance(payload, Mapping) else None
        if not isinstance(payload, list):
            raise IntegrationError(
                f"MCP tool {self._settings['search_tool']!r}: no list at "
                f"{self._settings['results']!r} in its result"
            )
        items: list[tuple[str, str]] = []
        for item in payload:
            key = self._field(item, "key_field")
            if isinstance(key, str) and key in self._turns:
                text = self._field(item, "text_field")
                items.append(
                    (key, " ".join(map(str, text)) if isinstance(text, list) else str(text))
                )
        return items

    def _field(self, item: Any, setting: str) -> Any:
        """The value of the field ``setting`` names in one search result item.

        An item that is not an object, or lacks the field, means the configuration does
        not match the server (every key would be unknown, every recall 0): it is an
        :class:`IntegrationError` naming the field and what the item held, not a miss.
        """
        field = self._settings[setting]
        where = (
            f"MCP tool {self._settings['search_tool']!r}: an item at {self._settings['results']!r}"
        )
        if not isinstance(item, Mapping):
            raise IntegrationError(
                f"{where} is not an object: {json.dumps(item, default=str)[:200]}"
            )
        if field not in item:
            held = ", ".join(map(repr, item)) or "nothing"
            raise IntegrationError(
                f"{where} has no {setting} {field!r}; it holds {held}: set {setting} to one of them"
            )
        return item[field]

    def search(self, query: str, k: int, /) -> list[Hit]:
        """At most ``k`` of this instance's turns for ``query``, best first (see the class)."""
        if not query.strip() or k < 1 or not self._turns:
            return []
        scores: dict[str, float] = {}
        texts: dict[str, str] = {}
        if self._settings["split_query"]:
            terms = list(dict.fromkeys(w for w in words(query) if w not in ENGLISH_STOPWORDS))
            held = len(self._turns)
            for term in terms or [query.strip()]:
                found = self._items(term, k)
                weight = math.log((held + 1) / max(len(found), 1))
                for key, text in found:
                    scores[key] = scores.get(key, 0.0) + weight
                    texts.setdefault(key, text)
        else:
            for rank, (key, text) in enumerate(self._items(query, k), start=1):
                scores.setdefault(key, 1.0 / rank)
                texts.setdefault(key, text)
        ranked = sorted(scores, key=lambda key: -scores[key])[:k]
        return [Hit(self._turns[key], scores[key], texts[key]) for key in ranked]

    def retrieve(self, query: str, /) -> str:
        """The best ``k`` hits' texts, best first; ``""`` when none."""
        return "\n".join(hit.text for hit in self.search(query, self.k))

    def reset(self) -> None:
        """``reset_tool`` on the keys stored since the last reset (if configured); forget them."""
        if self._turns and self._settings["reset_tool"] is not None:
            arguments = _fill(
                self._settings["reset_args"], {"keys": list(self._turns)}, "reset_args"
            )
            self._call(self._settings["reset_tool"], arguments)
        self._turns.clear()
