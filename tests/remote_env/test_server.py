"""test_server.py — seed_envserver.py's own failing branches, from a Python client.

  python test_server.py SERVER_PY

Starts the server (echo env, --max-sessions 2, --session-ttl 1) and checks: sessions are
independent; the least recently used session is evicted past --max-sessions; CLOSE and
idle expiry drop a session, after which a STEP gets a clear "unknown session" error; a
REQ client (empty delimiter frame) is answered; an env-name mismatch is an error reply;
garbage, a 3-frame message, a wrong schema version and a wrong body type are counted and
dropped without an answer while the server keeps serving, and the log line is written
once per peer; SIGTERM stops it with exit status 0 and its final counters; with
--curve-secret-file only a client holding the server's public key is answered, and EOF
on stdin (--watch-stdin) stops it. Then, in
process, the gym-sokoban adapter's params: dim_room shapes the grid, an unknown key is an
error naming it. Exits 0, or 1 with the failed check.
"""
import ast
import os
import re
import signal
import subprocess
import sys
import time

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "deploy", "envserver"))
import seedwire  # noqa: E402

failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("test_server: FAILED: " + msg, file=sys.stderr)


def main():
    server = sys.argv[1]
    pb2 = seedwire.load_pb2()
    proc = subprocess.Popen([sys.executable, server, "--bind", "tcp://127.0.0.1:*", "--env",
                             "echo", "--max-sessions", "2", "--session-ttl", "1",
                             "--watch-stdin"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.match(r"seed_envserver: listening on (\S+) env echo", line)
    if not m:
        print("server did not start: %r" % line, file=sys.stderr)
        proc.kill()
        return 1
    ep = m.group(1)
    ctx = zmq.Context()
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.RCVTIMEO, 10000)
    d.setsockopt(zmq.LINGER, 0)
    d.connect(ep)
    seq = [0]

    def call(kind, session, action="", env="echo", sock=d, sender="tester"):
        seq[0] += 1
        e = seedwire.envelope(pb2, sender, env_request=pb2.EnvRequest(
            kind=kind, session=session, seq=seq[0], action=action, env=env, seed=5))
        sock.send(e.SerializeToString())
        if kind == pb2.EnvRequest.CLOSE:
            return None
        r = pb2.Envelope()
        r.ParseFromString(sock.recv())
        check(r.schema == seedwire.SCHEMA_VERSION and r.WhichOneof("body") == "env_reply",
              "reply envelope")
        check(r.env_reply.session == session and r.env_reply.seq == seq[0],
              "reply echoes session and seq")
        return r.env_reply

    R, S, C = pb2.EnvRequest.RESET, pb2.EnvRequest.STEP, pb2.EnvRequest.CLOSE
    r = call(R, "s1")
    check(r.error == "" and r.observation == "echo ready (seed 5)" and
          list(r.admissible) == ["a", "b"], "reset s1: %r" % r)
    r = call(S, "s1", "a")
    check(r.observation == "echo: a" and r.reward == 1.0 and not r.done, "step s1: %r" % r)
    call(R, "s2")
    call(S, "s1", "b")      # s1 is now the most recently used
    call(R, "s3")           # evicts s2 (least recently used)
    r = call(S, "s2", "a")
    check("unknown session" in r.error, "evicted session: %r" % r.error)
    check(call(S, "s1", "a").error == "", "s1 survived eviction")
    call(C, "s1")
    r = call(S, "s1", "a")
    check("unknown session" in r.error, "closed session: %r" % r.error)
    r = call(R, "s4", env="twx")
    check(r.error == "ValueError: this server runs echo, not twx", "env mismatch: %r" % r.error)

    # REQ framing: [routing id][empty][payload]
    q = ctx.socket(zmq.REQ)
    q.setsockopt(zmq.RCVTIMEO, 10000)
    q.setsockopt(zmq.LINGER, 0)
    q.connect(ep)
    r = call(R, "req-1", sock=q)
    check(r.error == "" and r.observation.startswith("echo ready"), "REQ client: %r" % r)

    # Bad input: no reply, counted, server keeps serving.
    d.send(b"\xff\xff\xff\xff")
    d.send_multipart([b"a", b"b"])
    bad = seedwire.envelope(pb2, "bad-sender", env_request=pb2.EnvRequest(kind=R))
    bad.schema = 3
    d.send(bad.SerializeToString())
    wrong = seedwire.envelope(pb2, "bad-sender", env_reply=pb2.EnvReply(observation="x"))
    d.send(wrong.SerializeToString())
    r = call(R, "s5")
    check(r.error == "", "serving after bad input: %r" % r.error)

    # Idle expiry (ttl 1 s, swept every 0.5 s).
    call(R, "s6")
    time.sleep(2.0)
    r = call(S, "s6", "a")
    check("unknown session" in r.error, "expired session: %r" % r.error)

    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    check(proc.returncode == 0, "exit status %s on SIGTERM" % proc.returncode)
    m = re.search(r"wire (\{[^}]*\})", err)
    counters = ast.literal_eval(m.group(1)) if m else {}
    check(counters.get("malformed") == 2 and counters.get("wrong_version") == 1 and
          counters.get("unexpected_type") == 1, "server counters %r" % counters)
    drops = [ln for ln in err.splitlines() if "dropped a message" in ln]
    # DEALER d without sender (garbage, 3 frames) and with sender bad-sender: two peers.
    check(len(drops) == 2, "log once per peer: %d lines\n%s" % (len(drops), "\n".join(drops)))
    d.close()
    q.close()
    ctx.term()

    # CURVE: a client with the server's public key is served, one without is not.
    import tempfile
    pub, sec = zmq.curve_keypair()
    with tempfile.NamedTemporaryFile("wb", suffix=".key", delete=False) as f:
        f.write(sec)
        keyfile = f.name
    cproc = subprocess.Popen([sys.executable, server, "--bind", "tcp://127.0.0.1:*", "--env",
                              "echo", "--curve-secret-file", keyfile, "--watch-stdin"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = cproc.stdout.readline()
    os.unlink(keyfile)
    m = re.match(r"seed_envserver: listening on (\S+) env echo curve (\S+)", line)
    check(m is not None and m.group(2) == pub.decode(), "curve server line %r" % line)
    if m:
        ctx = zmq.Context()
        good = ctx.socket(zmq.DEALER)
        cpub, csec = zmq.curve_keypair()
        good.curve_serverkey, good.curve_publickey, good.curve_secretkey = pub, cpub, csec
        plain = ctx.socket(zmq.DEALER)
        for sock in (good, plain):
            sock.setsockopt(zmq.RCVTIMEO, 1500)
            # a DEALER whose only connection failed its handshake has no pipe left, and
            # its send would block for ever: bounded, it raises zmq.Again like the recv
            sock.setsockopt(zmq.SNDTIMEO, 1500)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(m.group(1))
        r = call(R, "c1", sock=good)
        check(r.error == "" and r.observation.startswith("echo ready"), "curve client: %r" % r)
        try:
            call(R, "c2", sock=plain)
            check(False, "a client without the server key was answered")
        except zmq.Again:
            pass
        good.close()
        plain.close()
        ctx.term()
    cproc.stdin.close()  # --watch-stdin: EOF stops it
    check(cproc.wait(timeout=30) == 0, "curve server exit status")

    # The gym-sokoban adapter's params, in process.
    import adapters
    f = adapters.SokobanFactory()
    a = f.session()
    r = a.reset(3, "train", "", "dim_room=7x8,num_boxes=1", 10)
    rows = r["observation"].split("\n")
    check(len(rows) == 7 and all(row.count("\t") == 8 for row in rows),
          "dim_room=7x8 grid: %r" % r["observation"])
    try:
        a.reset(3, "train", "", "room=6", 10)
        check(False, "an unknown sokoban param was accepted")
    except ValueError as e:
        check("room" in str(e) and "dim_room" in str(e), "unknown param error: %s" % e)
    train = a.reset(3, "train", "", "", 10)["observation"]
    seen = a.reset(3, "seen", "", "", 10)["observation"]
    unseen = a.reset(3, "unseen", "", "", 10)["observation"]
    check(len({train, seen, unseen}) == 3, "the splits give the same level for seed 3")
    check(a.reset(3, "seen", "", "", 10)["observation"] == seen, "seen level not reproducible")
    try:
        a.reset(3, "holdout", "", "", 10)
        check(False, "an unknown split was accepted")
    except ValueError as e:
        check("holdout" in str(e), "unknown split error: %s" % e)
    try:
        adapters.parse_params("novalue")
        check(False, "a param without '=' was accepted")
    except ValueError as e:
        check("novalue" in str(e), "param syntax error: %s" % e)

    if failures:
        print("test_server: %d checks failed" % failures, file=sys.stderr)
        return 1
    print("test_server: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
