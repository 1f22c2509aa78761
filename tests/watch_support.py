"""What the schedule and alert tests start on 127.0.0.1: a webhook receiver that records every body it is sent
(and can answer 500 to the first few), and a small SMTP server that records every message it is handed."""

from __future__ import annotations

import json
import socketserver
import threading
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookReceiver:
    def __init__(self, failures: int = 0) -> None:
        self.bodies: list[dict] = []
        self.failures = failures  # answer 500 to this many requests first
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    failing = receiver.failures > 0
                    receiver.failures -= failing
                    if not failing:
                        receiver.bodies.append(json.loads(body))
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *args) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[str]:
        with self.lock:
            return [b.get("event", "slack") for b in self.bodies]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class SmtpServer:
    """Enough SMTP for Django's backend: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT; messages kept parsed."""

    def __init__(self) -> None:
        self.messages: list = []
        smtp = self

        class Handler(socketserver.StreamRequestHandler):
            def reply(self, line: str) -> None:
                self.wfile.write((line + "\r\n").encode())

            def handle(self) -> None:
                self.reply("220 localhost test SMTP")
                recipients: list[str] = []
                while line := self.rfile.readline():
                    command = line.decode().strip()
                    verb = command.split(" ", 1)[0].upper()
                    if verb in ("EHLO", "HELO"):
                        self.reply("250 localhost")
                    elif verb == "MAIL":
                        recipients = []
                        self.reply("250 OK")
                    elif verb == "RCPT":
                        recipients.append(command.split(":", 1)[1].strip(" <>"))
                        self.reply("250 OK")
                    elif verb == "DATA":
                        self.reply("354 End data with <CR><LF>.<CR><LF>")
                        data = b""
                        while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                            data += chunk[1:] if chunk.startswith(b"..") else chunk
                        smtp.messages.append((recipients, message_from_bytes(data)))
                        self.reply("250 OK")
                    elif verb == "QUIT":
                        self.reply("221 Bye")
                        return
                    else:
                        self.reply("250 OK")

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
