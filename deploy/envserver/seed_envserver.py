#!/usr/bin/env python3
"""seed_envserver.py — serve a gym-style text environment to seed's `remote` env over
ZeroMQ (EnvRequest/EnvReply envelopes, proto/seed.proto).

  python seed_envserver.py --bind tcp://127.0.0.1:5599 --env NAME [--env-params k=v,...]

NAME is an adapter of adapters.py (gym-sokoban, twx, search-r1, alfworld, webshop, echo).
--env-params gives server-wide params (paths on this host: a data set, a retriever URL);
a request's own params override them key by key.

One ROUTER socket serves many clients (DEALER sockets) and many sessions: a session id
names one episode stream and owns one env instance (created on its first RESET, reused by
later RESETs, dropped on CLOSE, after --session-ttl seconds idle, or when --max-sessions
is exceeded, least recently used first). Every reply echoes the request's session and seq
so a client can discard a late reply. A request that fails (unknown session, env error)
gets a reply with `error` set; a malformed message is counted, logged once per peer and
dropped, as in the C wire layer. After binding, one line goes to stdout:
  seed_envserver: listening on <endpoint> env <name> [curve <server public key>]
SIGTERM/SIGINT stop it cleanly; so does EOF on stdin with --watch-stdin.
"""
import argparse
import collections
import logging
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zmq  # noqa: E402

import adapters  # noqa: E402
import seedwire  # noqa: E402

log = logging.getLogger("seed_envserver")


class Server:
    def __init__(self, args, pb2):
        self.args = args
        self.pb2 = pb2
        self.factory = adapters.FACTORIES[args.env]()
        adapters.merge_params(args.env_params, "")  # a malformed --env-params fails the start
        # A missing package is every request's error reply; say it once here as well.
        missing = self.factory.probe() if hasattr(self.factory, "probe") else ""
        if missing:
            log.warning("env %s cannot run yet: %s", args.env, missing)
        self.sessions = collections.OrderedDict()  # id -> [adapter, last_used, steps, max]
        self.rx = seedwire.Receiver(pb2, "envserver", {"env_request"},
                                    max_bytes=args.max_msg_bytes, routed=True)
        self.requests = 0
        self.errors = 0
        self.ctx = zmq.Context(io_threads=1)
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.MAXMSGSIZE, args.max_msg_bytes)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.HEARTBEAT_IVL, 1000)
        self.sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, 5000)
        self.sock.setsockopt(zmq.SNDHWM, args.hwm)
        self.sock.setsockopt(zmq.RCVHWM, args.hwm)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 0)  # a vanished client: drop the reply
        self.curve_public = None
        if args.curve_secret_file:
            # CURVE: only clients holding our public key can talk to us (and it is encrypted).
            with open(args.curve_secret_file, "rb") as f:
                secret = f.read().strip()
            self.curve_public = zmq.curve_public(secret).decode()
            self.sock.setsockopt(zmq.CURVE_SERVER, 1)
            self.sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
        self.sock.bind(args.bind)
        self.endpoint = self.sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self.stop = False

    def _session(self, sid, create):
        s = self.sessions.get(sid)
        if s is None:
            if not create:
                raise KeyError("unknown session %r (the server restarted or it expired): "
                               "reset first" % sid)
            while len(self.sessions) >= self.args.max_sessions:
                old, rec = self.sessions.popitem(last=False)
                rec[0].close()
                log.info("evicted session %s (max %d)", old, self.args.max_sessions)
            s = [self.factory.session(), 0.0, 0, 0]
            self.sessions[sid] = s
        self.sessions.move_to_end(sid)
        s[1] = time.monotonic()
        return s

    def _expire(self):
        now = time.monotonic()
        while self.sessions:
            sid, rec = next(iter(self.sessions.items()))
            if now - rec[1] < self.args.session_ttl:
                break
            self.sessions.popitem(last=False)
            rec[0].close()
            log.info("session %s expired after %.0f s idle", sid, self.args.session_ttl)

    def handle(self, req, rep):
        """Fill rep (an EnvReply) for req (an EnvRequest)."""
        K = self.pb2.EnvRequest
        rep.session = req.session
        rep.seq = req.seq
        if req.env and req.env != self.factory.name:
            raise ValueError("this server runs %s, not %s" % (self.factory.name, req.env))
        if req.kind == K.CLOSE:
            rec = self.sessions.pop(req.session, None)
            if rec:
                rec[0].close()
            return
        if req.kind == K.RESET:
            rec = self._session(req.session, True)
            params = adapters.merge_params(self.args.env_params, req.params)
            r = rec[0].reset(req.seed, req.split, req.task, params, req.max_steps)
            rec[2] = 0
            rec[3] = req.max_steps
            rep.task = r.get("task", "")
        elif req.kind == K.STEP:
            rec = self._session(req.session, False)
            r = rec[0].step(req.action)
            rec[2] += 1
            rep.reward = r["reward"]
            rep.won = r["won"]
            # The client's step limit ends the episode here too, whatever the env says.
            rep.done = r["done"] or (rec[3] > 0 and rec[2] >= rec[3])
        else:
            raise ValueError("unknown request kind %d" % req.kind)
        rep.observation = r["observation"]
        rep.admissible.extend(r["admissible"])
        rep.info = r.get("info", "")

    def serve(self):
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        if self.args.watch_stdin:
            poller.register(sys.stdin.fileno(), zmq.POLLIN)
        sender = "envserver-%s-%d" % (self.factory.name, os.getpid())
        last_expire = time.monotonic()
        while not self.stop:
            ready = dict(poller.poll(500))
            if time.monotonic() - last_expire > min(5.0, self.args.session_ttl / 2):
                self._expire()
                last_expire = time.monotonic()
            if self.args.watch_stdin and sys.stdin.fileno() in ready:
                if not os.read(sys.stdin.fileno(), 4096):
                    log.info("stdin closed: the parent is gone, stopping")
                    break
            if self.sock not in ready:
                continue
            frames = self.sock.recv_multipart(copy=False)
            peer = frames[0].get("Peer-Address") if frames else None
            prefix, env = self.rx.decode([f.bytes for f in frames], peer or "local")
            if env is None:
                continue
            self.requests += 1
            out = self.pb2.Envelope(schema=seedwire.SCHEMA_VERSION, sender=sender)
            rep = out.env_reply
            try:
                self.handle(env.env_request, rep)
            except Exception as e:  # an env failure is the episode's error, not the server's
                self.errors += 1
                rep.Clear()
                rep.session = env.env_request.session
                rep.seq = env.env_request.seq
                rep.error = "%s: %s" % (type(e).__name__, e)
                log.warning("request from %s failed: %s", env.sender or "?", rep.error)
            if env.env_request.kind == self.pb2.EnvRequest.CLOSE:
                continue  # clients do not wait for CLOSE
            self.sock.send_multipart(prefix + [out.SerializeToString()])
        log.info("stopping: %d requests, %d errors, wire %s", self.requests, self.errors,
                 self.rx.c.as_dict())

    def close(self):
        for rec in self.sessions.values():
            rec[0].close()
        self.sessions.clear()
        self.factory.close()
        self.sock.close(0)
        self.ctx.term()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", required=True, help="ZeroMQ endpoint, e.g. tcp://127.0.0.1:5599 "
                    "(tcp://127.0.0.1:* picks a free port; the line on stdout says which)")
    ap.add_argument("--env", required=True, choices=sorted(adapters.FACTORIES))
    ap.add_argument("--env-params", default="", help="server-wide env params, k=v,... "
                    "(a request's params override them key by key)")
    ap.add_argument("--max-sessions", type=int, default=4096)
    ap.add_argument("--session-ttl", type=float, default=900.0, help="seconds idle")
    ap.add_argument("--max-msg-bytes", type=int, default=1 << 20)
    ap.add_argument("--hwm", type=int, default=10000)
    ap.add_argument("--pb2-dir", default=None, help="where seed_pb2.py is generated "
                    "(default $SEED_PB2_DIR or a temp folder)")
    ap.add_argument("--proto", default=seedwire.DEFAULT_PROTO)
    ap.add_argument("--curve-secret-file", default=None,
                    help="a file holding this server's Z85 CURVE secret key: encrypt, and "
                    "refuse clients that lack the matching public key (printed at start)")
    ap.add_argument("--watch-stdin", action="store_true",
                    help="exit when stdin reaches EOF (a parent process that dies closes it)")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s [envserver] %(levelname)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # TextWorldExpress's JVM bridge
    pb2 = seedwire.load_pb2(args.pb2_dir, args.proto)
    srv = Server(args, pb2)

    def on_signal(signum, frame):
        srv.stop = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print("seed_envserver: listening on %s env %s%s" % (
        srv.endpoint, args.env, " curve " + srv.curve_public if srv.curve_public else ""),
        flush=True)
    try:
        srv.serve()
    finally:
        srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
