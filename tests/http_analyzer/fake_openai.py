"""A fake OpenAI-compatible chat-completions server for the http analyzer's tests.

The behaviour is chosen by the first path segment of the request (the base URL a test
gives the client is http://127.0.0.1:PORT/<behaviour>/v1):

  good        200, a well-formed answer whose content is SKILL (a skill with step lines)
  extrasteps  200, SKILL_EXTRA: SKILL plus a second "step 1:" line and a "step 40:" line
              (steps no episode of the tests takes), as a policy may write
  slow        answers after SLOW_S seconds (longer than the tests' timeout), or never
              once the server stops
  malformed   200 with a body that is not JSON
  nochoices   200 with JSON that has an empty choices array
  empty       200 with an empty message content
  huge        200 with a body of 4 MiB (past the client's size bound)
  flaky500    HTTP 500 for the first attempt of each distinct request body (per
              behaviour), then good
  always500   HTTP 500, always
  unauth      HTTP 401 unless the bearer key is KEY (a client error: not retried)

Every request is recorded (path, Authorization header, parsed body) in server.requests.
Bounded: the server runs in a daemon thread and stop() ends it; a slow answer waits on
an event that stop() sets.
"""
import http.server
import json
import threading
import time

SKILL = ("<skill>Push the box onto the target by standing behind it; never push a box into a "
         "corner.\nstep 1: Move toward the side of the box opposite the target.\n"
         "step 2: Push the box onto the target.</skill>")
SKILL_EXTRA = SKILL[:-len("</skill>")] + ("\nstep 1: Push it again.\n"
                                         "step 40: Push the box past the end.</skill>")
KEY = "sk-test-1234"
SLOW_S = 30.0


class FakeOpenAI:
    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        self.seen_bodies = set()
        self.stopping = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def reply(self, code, body, ctype="application/json"):
                data = body if isinstance(body, bytes) else body.encode()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                parts = self.path.strip("/").split("/")
                mode = parts[0] if parts else ""
                with fake.lock:
                    fake.requests.append({"path": self.path, "mode": mode,
                                          "auth": self.headers.get("Authorization"),
                                          "body": body, "t": time.time()})
                    first = (mode, raw) not in fake.seen_bodies
                    fake.seen_bodies.add((mode, raw))
                if not self.path.endswith("/v1/chat/completions"):
                    return self.reply(404, json.dumps({"error": {"message": "no route"}}))
                if mode == "slow":
                    fake.stopping.wait(SLOW_S)
                    return self.reply(200, answer(SKILL))
                if mode == "malformed":
                    return self.reply(200, "{\"choices\": [ this is not json")
                if mode == "nochoices":
                    return self.reply(200, json.dumps({"id": "x", "choices": []}))
                if mode == "empty":
                    return self.reply(200, answer("  "))
                if mode == "huge":
                    return self.reply(200, answer("x" * (4 << 20)))
                if mode == "always500" or (mode == "flaky500" and first):
                    return self.reply(500, json.dumps(
                        {"error": {"message": "the model is overloaded", "code": 500}}))
                if mode == "unauth" and self.headers.get("Authorization") != "Bearer " + KEY:
                    return self.reply(401, json.dumps({"error": {"message": "bad key"}}))
                return self.reply(200, answer(SKILL_EXTRA if mode == "extrasteps" else SKILL, body))

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def base(self, mode):
        return "http://127.0.0.1:%d/%s/v1" % (self.port, mode)

    def of(self, mode):
        with self.lock:
            return [r for r in self.requests if r["mode"] == mode]

    def stop(self):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(content, req=None):
    return json.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": (req or {}).get("model", "fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
