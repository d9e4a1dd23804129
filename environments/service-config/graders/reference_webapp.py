"""Reference copy of the inventory service (hidden): graders run this, not the workspace copy.

python3 webapp.py CONFIG          serve until interrupted
python3 webapp.py --check CONFIG  validate CONFIG and print the settings as JSON
"""

import configparser
import json
import logging
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LEVELS = ("debug", "info", "warning", "error")


def load(path):
    """The effective settings of the INI file at `path`; exits with a message if invalid."""
    parser = configparser.ConfigParser(strict=True, interpolation=None)
    try:
        with open(path) as handle:
            parser.read_file(handle)
        settings = {
            "host": parser.get("server", "host"),
            "port": parser.getint("server", "port"),
            "max_connections": parser.getint("server", "max_connections"),
            "log_level": parser.get("logging", "level"),
            "log_file": parser.get("logging", "file"),
            "name": parser.get("app", "name"),
            "static_dir": parser.get("app", "static_dir"),
        }
    except (OSError, configparser.Error, ValueError) as exc:
        sys.exit(f"{path}: {exc}")
    if not 1 <= settings["port"] <= 65535:
        sys.exit(f"{path}: port must be within 1..65535, found {settings['port']}")
    if settings["max_connections"] < 1:
        sys.exit(f"{path}: max_connections must be at least 1")
    if settings["log_level"] not in LEVELS:
        sys.exit(
            f"{path}: level must be one of {', '.join(LEVELS)}, found {settings['log_level']!r}"
        )
    return settings


def serve(settings):
    slots = threading.BoundedSemaphore(settings["max_connections"])
    os.makedirs(os.path.dirname(settings["log_file"]), exist_ok=True)
    logging.basicConfig(
        filename=settings["log_file"],
        level=settings["log_level"].upper(),
        format="%(asctime)s %(levelname)s %(message)s",
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if not slots.acquire(blocking=False):
                self.send_error(503, "too many connections")
                return
            try:
                if self.path != "/health":
                    self.send_error(404)
                    return
                body = json.dumps({"status": "ok", **settings}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            finally:
                slots.release()

        def log_message(self, fmt, *args):
            logging.info("%s %s", self.address_string(), fmt % args)

    server = ThreadingHTTPServer((settings["host"], settings["port"]), Handler)
    logging.warning("%s listening on %s:%s", settings["name"], settings["host"], settings["port"])
    server.serve_forever()


def main(argv):
    if len(argv) == 2 and argv[0] == "--check":
        print(json.dumps(load(argv[1]), indent=2))
        return
    if len(argv) != 1:
        sys.exit(__doc__)
    serve(load(argv[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
