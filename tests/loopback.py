"""A loopback HTTP server that plays CouchDB badly on purpose, for tests that need no real CouchDB.

`script` maps (method, path) to a list of answers used in order (the last one repeats); an answer is
(status, headers, body) or "drop" (close the connection without answering). When a list runs out, `handler`
answers (if given; else the last answer repeats). Every request is logged.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Answer = Any


class Loopback:
    def __init__(self, script: dict[tuple[str, str], list[Answer]] | None = None,
                 handler: Callable[[str, str, bytes], Answer] | None = None, *, query: bool = False):
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.handler = handler
        self.query = query      # the handler gets the path with its query string
        self.log: list[tuple[str, str, bytes]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.split("?", 1)[0]
                answer = outer.answer(self.command, path, body, self.path)
                if answer == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                status, headers, payload = answer
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def answer(self, method: str, path: str, body: bytes, full_path: str | None = None) -> Answer:
        with self.lock:
            self.log.append((method, path, body))
            queue = self.script.get((method, path))
            if queue:
                return queue.pop(0) if len(queue) > 1 or self.handler is not None else queue[0]
        if self.handler is not None:
            return self.handler(method, full_path if self.query and full_path else path, body)
        return 404, {}, {"error": "not_found", "reason": "missing"}

    def requests(self, method: str, path: str) -> list[bytes]:
        with self.lock:
            return [b for m, p, b in self.log if (m, p) == (method, path)]

    def __enter__(self) -> "Loopback":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def bulk_docs_ok(body: bytes) -> tuple[int, dict, list]:
    """What CouchDB answers to an accepted _bulk_docs: one ok row per document."""
    docs = json.loads(body)["docs"]
    return 201, {}, [{"ok": True, "id": d["_id"], "rev": "1-x"} for d in docs]
