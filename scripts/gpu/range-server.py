#!/usr/bin/env python3
"""A loopback HTTP server for the files of one folder that answers range requests (python3 -m http.server
does not): `Range: bytes=A-B`, `bytes=A-` and `bytes=-N` get 206 Partial Content with Content-Range,
Content-Length and an ETag (size and mtime); no Range gets the whole file (200); HEAD works; a range
past the end gets 416. HTTP/1.1 with keep-alive and one thread a connection, so pcv's pooled agent
fetches several nodes at once. For `pcv URL` flights on a machine with no outside network
(scripts/gpu.sh lod, PCV_LOD_HTTP=1) and by hand:

    scripts/gpu/range-server.py DIR [--port 0] [--port-file F] [--stall-after N]

--stall-after N answers the first N requests, then stops answering (each later request is read and the
connection held open without a byte): a server that goes silent mid-flight, for trying the viewer's
deadlines and retry lines by hand.

Binds 127.0.0.1 only. With --port 0 (the default) the kernel picks a free port; it is printed on the
first line of stdout ("serving DIR on http://127.0.0.1:PORT/") and written to --port-file.
"""
import argparse
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("dir")
p.add_argument("--port", type=int, default=0)
p.add_argument("--port-file")
p.add_argument("--stall-after", type=int, default=-1)
a = p.parse_args()
import threading
import time

answered = 0
answered_lock = threading.Lock()
root = os.path.realpath(a.dir)
CHUNK = 1 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def target(self):
        name = self.path.split("?", 1)[0].lstrip("/")
        path = os.path.realpath(os.path.join(root, name))
        if not path.startswith(root + os.sep) or not os.path.isfile(path):
            return None
        return path

    def fail(self, code, extra=None):
        self.send_response(code)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def answer(self, body):
        global answered
        with answered_lock:
            answered += 1
            stalled = a.stall_after >= 0 and answered > a.stall_after
        if stalled:
            time.sleep(3600)
            return
        path = self.target()
        if path is None:
            return self.fail(404)
        st = os.stat(path)
        size = st.st_size
        etag = f'"{size:x}-{int(st.st_mtime_ns):x}"'
        rng = self.headers.get("Range")
        start, end, code = 0, size - 1, 200
        if rng:
            m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", rng)
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self.fail(416, {"Content-Range": f"bytes */{size}"})
            if m.group(1) == "":
                start, end = max(0, size - int(m.group(2))), size - 1
            else:
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            if start >= size or start > end:
                return self.fail(416, {"Content-Range": f"bytes */{size}"})
            code = 206
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(end - start + 1))
        if code == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if not body:
            return
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start + 1
            while left > 0:
                b = f.read(min(CHUNK, left))
                if not b:
                    break
                self.wfile.write(b)
                left -= len(b)

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


srv = Server(("127.0.0.1", a.port), Handler)
port = srv.server_address[1]
print(f"serving {root} on http://127.0.0.1:{port}/", flush=True)
if a.port_file:
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(a.port_file + ".tmp", a.port_file)
try:
    srv.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
