"""``python tests/local_server_child.py MODEL``: start MODEL's local server, say so, wait.

A stand-in for a himga process that serves a local model, for the tests that stop it
by a signal: it prints the server's port once the server answers, then sleeps until
a signal ends it (SIGINT raises KeyboardInterrupt, the usual Ctrl-C path).
"""

from __future__ import annotations

import sys
import time

from himga.llm import get_client

if __name__ == "__main__":
    client = get_client("local", model=sys.argv[1])
    print(client.base_url, flush=True)
    while True:
        time.sleep(60)
