"""A knowledge-graph MCP memory server over streamable HTTP, for the mcp adapter's HTTP test.

It offers the reference server's (npm ``@modelcontextprotocol/server-memory``) three
tools the adapter's ``server-memory`` preset uses, with the same matching:
``search_nodes`` keeps an entity when the whole query, lower-cased, is a substring of
its name, type or an observation. Run as ``python tests/mcp_http_server.py PORT``;
it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("himga-test-memory")
_graph: dict[str, dict[str, Any]] = {}


@server.tool()
def create_entities(entities: list[dict[str, Any]]) -> dict[str, Any]:
    """Create the entities whose name is new; return those created."""
    created = [entity for entity in entities if entity["name"] not in _graph]
    _graph.update((entity["name"], entity) for entity in created)
    return {"entities": created}


@server.tool()
def search_nodes(query: str) -> dict[str, Any]:
    """The entities whose name, type or an observation holds the whole query."""
    needle = query.lower()
    found = [
        entity
        for entity in _graph.values()
        if needle in entity["name"].lower()
        or needle in entity["entityType"].lower()
        or any(needle in observation.lower() for observation in entity["observations"])
    ]
    return {"entities": found, "relations": []}


@server.tool()
def delete_entities(entityNames: list[str]) -> str:
    """Delete the named entities (the parameter keeps the reference server's name)."""
    for name in entityNames:
        _graph.pop(name, None)
    return "Entities deleted successfully"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
