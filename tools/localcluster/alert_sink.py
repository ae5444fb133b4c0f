# Copyright: gpucloud.platform contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local cluster's webhook receiver: it keeps every notification Alertmanager posts,
one JSON line per post, by path (``/platform``, ``/tenant/<name>``), and answers a GET
of a path with what it kept there, oldest first, so a test or a reader sees which
receiver an alert reached (`cluster.py alert-sink`, a component of its own)."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# A path is kept as a file of the same name: letters, digits, '-', '_' and '/' only.
_PATH = re.compile(r"^/[A-Za-z0-9_/-]{1,200}$")


def _file(root: Path, path: str) -> Path | None:
    if not _PATH.match(path) or ".." in path:
        return None
    return root / (path.strip("/").replace("/", "__") + ".jsonl")


def make_handler(root: Path) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: bytes, kind: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            target = _file(root, self.path)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                payload = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                self._answer(400, b"not JSON\n")
                return
            if target is None:
                self._answer(404, b"no such path\n")
                return
            with lock, target.open("a") as out:
                out.write(json.dumps(payload, sort_keys=True) + "\n")
            self._answer(200, b"kept\n")

        def do_GET(self) -> None:
            target = _file(root, self.path)
            if target is None:
                self._answer(404, b"no such path\n")
                return
            body = target.read_bytes() if target.exists() else b""
            self._answer(200, body, "application/x-ndjson")

        def log_message(self, format: str, *args: object) -> None:
            print(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)

    return Handler


def serve(root: Path, host: str, port: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    ThreadingHTTPServer((host, port), make_handler(root)).serve_forever()
