"""An application instance that uses Krake's hooks (krake.md §6.7), for the tests; it reads
what Drover put in its environment, as Krake's own hook users do.

Usage: hook_app.py complete        calls its complete hook after a second, then idles
       hook_app.py shutdown PORT [DELAY]
                                   after DELAY seconds (default 0; more plays an app slow to start)
                                   serves PUT /shutdown on 127.0.0.1:PORT; when asked, answers
                                   and calls its shutdown hook (it has cleaned up), then idles
Only the standard library: it runs under the machine's python3, as an `exec` instance.
"""
import json
import os
import sys
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer


def call(hook):
    url = os.environ[f"KRAKE_{hook}_URL"]
    token = os.environ[f"KRAKE_{hook}_TOKEN"]
    request = urllib.request.Request(
        url,
        data=json.dumps({"token": token}).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    for _ in range(50):
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                print(f"{hook} hook: {answer.status}", flush=True)
                return
        except Exception as error:  # the node may be busy: try again, bounded
            print(f"{hook} hook: {error}", flush=True)
            time.sleep(0.2)


class Shutdown(BaseHTTPRequestHandler):
    def do_PUT(self):
        if self.path != "/shutdown":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"shutting down\n")
        call("SHUTDOWN")


if sys.argv[1] == "complete":
    time.sleep(1)
    call("COMPLETE")
    time.sleep(600)
else:
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0)
    HTTPServer(("127.0.0.1", int(sys.argv[2])), Shutdown).serve_forever()
