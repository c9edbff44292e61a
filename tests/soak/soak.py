"""A soak with faults: the real loop (seed-learner, seed-actor, seed-analyzer, seedctl on
loopback) under a chaos driver, then checks that the run survived it (issue 14 item 10).

usage: soak.py [chaos|ledger|ledger_unknown|ledger_empty] BIN_DIR REPO

The ledger cases are the deterministic ones behind the conservation check:
  ledger          an analyzer that takes a group, goes silent until the learner forgets it
                  (its group counted lost) and then returns the group scored: the learner
                  drops it (rejected.not_dealt) instead of training what it already
                  counted lost, and the equation closes;
  ledger_unknown  a group dealt to an analyzer known only by its READY (no heartbeat yet)
                  is in the checkpoint's dealt_outstanding, and a resumed learner's books
                  close (chaos found this hole once: seed 307018814);
  ledger_empty    groups used up by a step that makes no update are counted lost
                  (step_empty), and the equation closes.

Environment:
  SEED_SOAK_SECONDS  seconds of chaos (default 75: the CI form, ~3 minutes with start-up
                     and the checks under ASan; the long form is SEED_SOAK_SECONDS=600)
  SEED_SOAK_SEED     the chaos RNG's seed (default: random; it is printed, set it to replay
                     the same schedule of faults)
  SEED_KEEP_LOGS     keep the run's temp dir (logs, run dir) even when the soak passes

The learner binds its six endpoints on loopback; actors and analyzers reach five of them
(groups_in, groups_out, scored_in, weights, telemetry) through TCP relays of this driver,
one per endpoint. From the seeded RNG, at random moments, the driver:
  - kills an actor or an analyzer (SIGKILL or SIGTERM) and restarts it, under its own id (a
    new incarnation) or a new one;
  - kills the learner (SIGKILL or SIGTERM) and restarts it with checkpoint.resume=true;
  - cuts a link: the relay of one endpoint closes every connection through it and refuses
    new ones (accepts and closes them at once) for 0.5-6 s, then lets them through again
    (peers reconnect by themselves; cuts longer than wire.peer_timeout_ms make the learner
    forget its peers);
  - sends malformed traffic with pyzmq: random bytes, truncated envelopes and envelopes of
    the wrong type or schema to every socket the learner binds, and into the analyzers' and
    actors' groups_out streams (the relay splices a whole ZMTP message between two of the
    learner's messages).

At the end (chaos stopped, links restored, every role running) it checks:
  1. training advanced: RL steps after the chaos, and at least one after the last learner
     restart;
  2. conservation: with the actors stopped and the analyzers gone (the learner forgets
     them after wire.peer_timeout_ms), every episode the learner received is trained,
     dropped stale, lost with a reason, or still queued (hub and train queues, which the
     checkpoint keeps):
        G * groups_received == episodes_trained + dropped_stale + lost_received + G * queued
     where lost_received is what the hub had dealt to analyzers and never got back (status
     counts.episodes_lost_received; a scored group no ledger holds any more is dropped as
     rejected.not_dealt, not trained twice), read from `seedctl status --json` and again from the
     final checkpoint's persisted counters and queued groups after a resume. And exactly,
     against what actors sent (each incarnation numbers its groups; its links show the
     highest seq and heartbeat groups_sent that went out, check_sent):
        sent == G * groups_received + refused + lost in transit + G * acks_pending
     so every episode sent is trained, stale, lost with a reason (after receipt, or in
     transit: a cut link, a learner killed holding it or after its last checkpoint),
     refused, or queued; no gap is tolerated;
  3. no process grew without bound: RSS of every role sampled from /proc each second; per
     role the largest of its last 15% of samples is at most 1.5x + 64 MiB the median of its
     samples in the 20 s after warm-up;
  4. the final checkpoint resumes: a learner started on it reports that checkpoint's step,
     version and counters.
Every wait is a condition with a bound; nothing asserts on speed.
"""
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import zmq

CASE = sys.argv[1] if len(sys.argv) > 3 else "chaos"
BIN, REPO = sys.argv[-2], sys.argv[-1]
sys.path.insert(0, os.path.join(REPO, "deploy", "envserver"))
import seedwire  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests"))
import looptools  # noqa: E402

pb = seedwire.load_pb2(os.environ.get("SEED_PB2_DIR"))
TOKENIZER = os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json")
SECONDS = float(os.environ.get("SEED_SOAK_SECONDS", "75"))
SEED = int(os.environ.get("SEED_SOAK_SEED") or random.SystemRandom().randrange(1, 1 << 31))
G = 4  # group size of the soak's job
N_ACTORS, N_ANALYZERS = 2, 2
PEER_TIMEOUT_S = 4.0
LINKS = ("groups_in", "groups_out", "scored_in", "weights", "telemetry")  # base_port + 0..4
CTX = zmq.Context()


def log(msg):
    print("[soak %6.1f] %s" % (time.time() - T0, msg), flush=True)


T0 = time.time()


# ---- links: a TCP relay per endpoint ---------------------------------------------------------

class Zmtp:
    """Follows the ZMTP 3 frames of one direction of a connection: where a whole message
    ends (so a message can be spliced in there) and, optionally, every whole message."""

    def __init__(self, keep=False):
        self.greeting = 64
        self.hdr = b""
        self.left = 0  # body bytes left of the current frame
        self.more = False
        self.command = False
        self.handshaken = False
        self.keep, self.body, self.parts, self.messages = keep, bytearray(), [], []

    def feed(self, data):
        i = 0
        while i < len(data):
            if self.greeting:
                k = min(self.greeting, len(data) - i)
                self.greeting -= k
                i += k
                continue
            if self.left == 0 and not self.hdr_done():
                self.hdr += data[i:i + 1]
                i += 1
                if self.hdr_done():
                    flags = self.hdr[0]
                    size = int.from_bytes(self.hdr[1:], "big")
                    self.more, self.command = bool(flags & 1), bool(flags & 4)
                    self.left = size
                    if size == 0:
                        self.end_frame()
                continue
            k = min(self.left, len(data) - i)
            if self.keep and not self.command:
                self.body += data[i:i + k]
            self.left -= k
            i += k
            if self.left == 0:
                self.end_frame()

    def hdr_done(self):
        if not self.hdr:
            return False
        return len(self.hdr) == (9 if self.hdr[0] & 2 else 2)

    def end_frame(self):
        self.hdr = b""
        if self.command:
            self.handshaken = True
        elif self.keep:
            self.parts.append(bytes(self.body))
            self.body = bytearray()
            if not self.more:
                self.messages.append(self.parts)
                self.parts = []

    def at_boundary(self):
        return self.handshaken and not self.greeting and not self.hdr and self.left == 0 and \
            not self.more


class Relay:
    """Listens on a port of its own and forwards every connection, byte for byte, to the
    learner's endpoint. cut(s): every connection through it is closed and new ones are
    closed as soon as they are accepted, for s seconds. inject(msg): a whole ZMTP message
    spliced into every learner -> peer stream at a message boundary. count: whole
    EpisodeGroups seen peer -> learner (groups_in)."""

    def __init__(self, name, target, count=False):
        self.name, self.target, self.count = name, target, count
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.ls.setblocking(False)
        self.port = self.ls.getsockname()[1]
        self.pairs = []  # [peer_sock, learner_sock, to_learner, to_peer, zmtp_up, zmtp_down]
        self.down_until = 0.0
        self.cuts = 0
        self.injected = 0
        self.inject_q = []
        self.sent_groups = {}  # (actor_id, group_id, task_seed) -> episodes, seen whole
        self.sent_episodes = 0  # episodes of groups written whole to a learner connection
        # what actors sent, per (actor id, incarnation): the highest EpisodeGroup.seq seen
        # whole on groups_in and the highest Heartbeat.groups_sent seen whole on telemetry
        self.seq_max = {}
        self.hb_max = {}
        self.cut_episodes = 0  # episodes of whole groups the relay held when a cut dropped
        self.cut_partial = 0  # groups cut in the middle of their bytes
        self.lock = threading.Lock()

    def cut(self, seconds):
        with self.lock:
            self.down_until = time.time() + seconds
            self.cuts += 1
            for p in self.pairs:
                self.drop_pair(p)
            self.pairs = []

    def drop_pair(self, p):
        # what the relay still holds toward the learner is lost with the link
        up = p[4]
        if up is not None:
            held = p[6]
            for ep in held:
                self.cut_episodes += ep
            if up.left or up.hdr or up.parts:
                self.cut_partial += 1
        for s in p[:2]:
            try:
                s.close()
            except OSError:
                pass

    def inject(self, msg):
        with self.lock:
            self.inject_q.append(msg)

    def fds(self):
        with self.lock:
            r = [self.ls] + [s for p in self.pairs for s in p[:2]]
            w = [p[1] for p in self.pairs if p[2]] + [p[0] for p in self.pairs if p[3]]
            return r, w

    def on_ready(self, r, w):
        with self.lock:
            if self.ls in r:
                try:
                    c, _ = self.ls.accept()
                except OSError:
                    c = None
                if c is not None:
                    if time.time() < self.down_until:
                        c.close()  # refused while the link is down
                    else:
                        try:
                            u = socket.create_connection(("127.0.0.1", self.target), timeout=2)
                            c.setblocking(False)
                            u.setblocking(False)
                            # [peer, learner, to_learner, to_peer, zmtp up, zmtp down,
                            #  episodes of whole groups not yet written, byte marks]
                            self.pairs.append([c, u, bytearray(), bytearray(),
                                               Zmtp(keep=True) if self.count else None, Zmtp(),
                                               [], []])
                        except OSError:
                            c.close()
            dead = []
            for p in self.pairs:
                c, u = p[0], p[1]
                try:
                    if c in r and len(p[2]) < (1 << 20):
                        d = c.recv(65536)
                        if not d:
                            dead.append(p)
                            continue
                        p[2] += d
                        if p[4] is not None:
                            p[4].feed(d)
                            for parts in p[4].messages:
                                self.note_up(p, parts)
                            p[4].messages = []
                    if u in r and len(p[3]) < (1 << 20):
                        d = u.recv(65536)
                        if not d:
                            dead.append(p)
                            continue
                        p[3] += d
                        p[5].feed(d)
                    if u in w and p[2]:
                        n = u.send(p[2])
                        del p[2][:n]
                        self.written(p, n)
                    if c in w and p[3]:
                        n = c.send(p[3])
                        del p[3][:n]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    dead.append(p)
            for p in dead:
                if p in self.pairs:
                    self.drop_pair(p)
                    self.pairs.remove(p)
            if self.inject_q:
                for p in self.pairs:
                    if p[5].at_boundary():
                        for m in self.inject_q:
                            p[3] += (bytes([0, len(m)]) if len(m) < 256 else
                                     bytes([2]) + len(m).to_bytes(8, "big")) + m
                            self.injected += 1
                self.inject_q = []

    def note_up(self, p, parts):
        """A whole message from a peer: an EpisodeGroup's episodes count once its last byte
        is written to the learner's connection."""
        env = pb.Envelope()
        try:
            env.ParseFromString(parts[-1])
        except Exception:  # noqa: BLE001 (not ours: anything a peer sends)
            return
        if env.WhichOneof("body") == "heartbeat" and env.heartbeat.role == pb.ROLE_ACTOR:
            h = env.heartbeat
            key = (h.id, h.incarnation)
            self.hb_max[key] = max(self.hb_max.get(key, 0), h.groups_sent)
        if env.WhichOneof("body") != "episode_group":
            return
        g = env.episode_group
        key = (g.actor_id, g.incarnation)
        self.seq_max[key] = max(self.seq_max.get(key, 0), g.seq)
        key = (g.actor_id, g.group_id, g.task_seed, g.created)
        if key in self.sent_groups:
            return
        self.sent_groups[key] = len(g.episodes)
        p[6].append(len(g.episodes))
        p[7].append(len(p[2]))  # the message ends at this offset of to_learner

    def written(self, p, n):
        marks = p[7]
        for i in range(len(marks)):
            marks[i] -= n
        while marks and marks[0] <= 0:
            marks.pop(0)
            self.sent_episodes += p[6].pop(0)


def relay_loop(relays, stop):
    while not stop.is_set():
        r, w = [], []
        owner = {}
        for rl in relays:
            a, b = rl.fds()
            for s in a + b:
                owner[s] = rl
            r += a
            w += b
        try:
            rr, ww, _ = select.select(r, w, [], 0.05)
        except (OSError, ValueError):
            continue  # a socket closed by a cut meanwhile
        for rl in relays:
            rl.on_ready([s for s in rr if owner.get(s) is rl], [s for s in ww if owner.get(s) is rl])


# ---- the job and the roles -------------------------------------------------------------------

def free_base_port():
    return looptools.free_base_port(14)


def make_model(d):
    looptools.make_tiny_model(d, TOKENIZER)


def write_job(tmp, port):
    job = {
        "job": {"name": "soak", "run_dir": os.path.join(tmp, "run"), "total_steps": 100000},
        "model": {"path": os.path.join(tmp, "model"), "init": "random", "threads": 1},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 2,
                  "options": {"room_size": "6", "boxes": "1"}}],
        "algorithm": {"mode": "seed", "group_size": G, "stage0_steps": 1, "stage1_steps": 0,
                      "max_staleness": 2},
        "optim": {"groups_per_step": 0, "tokens_per_step": 1024, "micro_batch_tokens": 1024, "lr": 1e-4},
        "sampling": {"max_new_tokens": 8},
        "actor": {"episodes_in_flight": G, "groups_in_flight": 1},
        "analyzer": {"skill_source": "oracle", "batch_tokens": 4096},
        "endpoints": {"host": "127.0.0.1", "base_port": port},
        "checkpoint": {"every": 2, "keep": 3},
        "wire": {"peer_timeout_ms": int(PEER_TIMEOUT_S * 1000), "max_msg_bytes": 4 << 20},
        "eval": {"every": 0, "episodes": 2, "batch": 2},
        "roles": {"actors": N_ACTORS, "analyzers": N_ANALYZERS, "stop_timeout_s": 60},
    }
    path = os.path.join(tmp, "job.yaml")
    with open(path, "w") as f:
        json.dump(job, f, indent=1)  # JSON is YAML
    return path


class Roles:
    """Every process the driver started, by name (the id it runs under)."""

    def __init__(self, tmp, job, relays):
        self.tmp, self.job, self.relays = tmp, job, relays
        self.procs = {}  # name -> Popen of the live incarnation
        self.all = []  # (role, name, Popen) of every incarnation
        self.rss = []  # (t, role, pid, rss bytes)
        self.env = dict(os.environ)
        # ASan's quarantine (256 MiB by default) fills over minutes and would read as growth
        self.env["ASAN_OPTIONS"] = (self.env.get("ASAN_OPTIONS", "") +
                                    ":quarantine_size_mb=16:malloc_context_size=5").lstrip(":")
        self.env.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    def peer_args(self):
        return ["endpoints.%s=tcp://127.0.0.1:%d" % (name, self.relays[name].port)
                for name in LINKS]

    def start(self, role, name, *extra):
        log_f = open(os.path.join(self.tmp, name + ".log"), "ab")
        args = [os.path.join(BIN, "seed-" + role), "--job", self.job, "--id", name]
        if role != "learner":
            args += self.peer_args()
        p = subprocess.Popen(args + list(extra), stdout=log_f, stderr=subprocess.STDOUT,
                             env=self.env)
        log_f.close()
        self.procs[name] = p
        self.all.append((role, name, p))
        return p

    def stop(self, name, sig):
        p = self.procs.pop(name)
        if p.poll() is None:
            p.send_signal(sig)
        try:
            p.wait(timeout=120 if sig == signal.SIGTERM else 30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError("%s did not stop within 120 s of SIGTERM" % name)
        return p.returncode

    def live(self, role):
        return sorted(n for n, p in self.procs.items() if self.role_of(n) == role)

    @staticmethod
    def role_of(name):
        return name.split("-")[0]

    def sample_rss(self):
        now = time.time() - T0
        for name, p in list(self.procs.items()):
            try:
                with open("/proc/%d/status" % p.pid) as f:
                    for ln in f:
                        if ln.startswith("VmRSS:"):
                            self.rss.append((now, self.role_of(name), p.pid,
                                             int(ln.split()[1]) * 1024))
            except OSError:
                pass

    def check_dead(self):
        """A role that exits by itself (not killed by the driver) is a failure."""
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise AssertionError("%s exited by itself with %s:\n%s" % (
                    name, p.returncode, tail(self.tmp, name)))

    def stop_all(self):
        for _, _, p in self.all:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        t0 = time.time()
        for _, _, p in self.all:
            try:
                p.wait(timeout=max(1, 90 - (time.time() - t0)))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def tail(tmp, name, n=40):
    try:
        with open(os.path.join(tmp, name + ".log"), errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# ---- the status socket ----------------------------------------------------------------------

def status(port, timeout_ms=3000):
    return looptools.status_request(CTX, pb, seedwire, port, "soak-driver", timeout_ms)


def seedctl_status(port):
    r = subprocess.run([os.path.join(BIN, "seedctl"), "status", "tcp://127.0.0.1:%d" % (port + 5),
                        "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "seedctl status failed: %s %s" % (r.stdout[-500:], r.stderr[-500:])
    return json.loads(r.stdout)


def wait_for(what, pred, port, timeout, roles=None):
    t0 = time.time()
    last = None
    while time.time() - t0 < timeout:
        if roles is not None:
            roles.sample_rss()
            roles.check_dead()
        st = status(port)
        if st is not None:
            last = st
            if pred(st):
                log("%s (%.1f s)" % (what, time.time() - t0))
                return st
        time.sleep(0.3)
    raise AssertionError("timed out after %d s waiting for %s; last status: %s" %
                         (timeout, what, json.dumps(last)[:3000] if last else None))


# ---- malformed traffic ----------------------------------------------------------------------

def envelope(sender="chaos"):
    return pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender=sender)


def bad_messages(rng):
    """Random bytes, truncated envelopes (the body, serialized last, claims more bytes than
    remain, so no prefix decodes) and well-formed envelopes of a type the socket does not
    take or of another schema."""
    hb = envelope()
    hb.heartbeat.role, hb.heartbeat.id, hb.heartbeat.host = pb.ROLE_ACTOR, "chaos", "h"
    grp = envelope()
    g = grp.episode_group
    g.env, g.split, g.policy_version, g.actor_id = "sokoban", "train", 1, "chaos"
    ep = g.episodes.add()
    stp = ep.steps.add()
    stp.prompt_ids.extend(range(10, 40))
    stp.response_ids.extend([5, 6, 7])
    stp.sample_logprobs.extend([-1.0, -1.0, -1.0])
    req = envelope()
    req.status_request.what = ""
    wrong = envelope()
    wrong.schema = 99
    wrong.heartbeat.id = "chaos"
    out = [os.urandom(rng.randrange(1, 400)), b"\xff" * rng.randrange(1, 64), b"",
           wrong.SerializeToString()]
    for e in (hb, grp):
        raw = e.SerializeToString()
        out.append(raw[:-rng.randrange(1, min(len(raw) - 8, 20))])
    return out, {"heartbeat": hb.SerializeToString(), "episode_group": grp.SerializeToString(),
                 "status_request": req.SerializeToString()}


def send_garbage(port, rng, relays):
    msgs, typed = bad_messages(rng)
    # a body of a type each socket does not take (a heartbeat on groups_in is counted as
    # unexpected_type, a group on telemetry too); never a body it takes, which would be a
    # real peer's message, not a malformed one
    wrong_for = {0: ["heartbeat", "status_request"], 2: ["heartbeat", "episode_group"],
                 4: ["episode_group", "status_request"], 1: ["episode_group", "heartbeat"],
                 3: ["heartbeat", "episode_group"], 5: ["heartbeat", "episode_group"]}
    n = 0
    for off in range(6):
        kind = zmq.PUSH if off in (0, 2, 4) else zmq.DEALER
        s = CTX.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SNDHWM, 1000)
        s.connect("tcp://127.0.0.1:%d" % (port + off))
        for m in msgs + [typed[t] for t in wrong_for[off]]:
            try:
                s.send(m, zmq.NOBLOCK)
                n += 1
            except zmq.Again:
                pass
        time.sleep(0.05)  # let the connection flush before the socket goes
        s.close()
    # into the analyzers' and actors' groups_out streams, between two of the learner's messages
    for m in msgs[:3] + [typed["heartbeat"], typed["status_request"]]:
        if m:
            relays["groups_out"].inject(m)
    return n


# ---- the chaos --------------------------------------------------------------------------------

def chaos(roles, port, relays, rng, seconds, counts):
    """Faults at random moments for `seconds`; returns the step of the last learner restart."""
    t_end = time.time() + seconds
    last_learner_kill = time.time()
    restart_step = None
    next_ids = {"actor": N_ACTORS, "analyzer": N_ANALYZERS}
    down = {}  # name -> time to start it again
    while time.time() < t_end:
        roles.sample_rss()
        roles.check_dead()
        now = time.time()
        for name, t in list(down.items()):
            if now >= t:
                roles.start(Roles.role_of(name), name)
                del down[name]
        wait = rng.uniform(1.0, 4.0)
        t_next = time.time() + wait
        while time.time() < t_next:
            roles.sample_rss()
            time.sleep(0.25)
        what = rng.choices(["actor", "analyzer", "learner", "link", "garbage"],
                           weights=[3, 3, 1.5, 3, 2])[0]
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
        sig_name = "SIGKILL" if sig == signal.SIGKILL else "SIGTERM"
        if what in ("actor", "analyzer"):
            live = roles.live(what)
            if not live:
                continue
            name = rng.choice(live)
            roles.stop(name, sig)
            counts["kills_" + what] += 1
            counts[sig_name] += 1
            # back under its own id (a new incarnation) or a new one
            if rng.random() < 0.6:
                new = name
            else:
                new = "%s-%d" % (what, next_ids[what])
                next_ids[what] += 1
            down[new] = time.time() + rng.uniform(0.2, 3.0)
            log("%s %s; %s back in %.1f s" % (sig_name, name, new, down[new] - time.time()))
        elif what == "learner":
            if time.time() - last_learner_kill < 20:  # let it train between restarts
                continue
            roles.stop("learner", sig)
            counts["kills_learner"] += 1
            counts["learner_SIGKILL"] += sig == signal.SIGKILL
            counts[sig_name] += 1
            time.sleep(rng.uniform(0, 2))
            roles.start("learner", "learner", "checkpoint.resume=true")
            st = wait_for("learner back after %s" % sig_name, lambda s: True, port, 240, roles)
            restart_step = st["step"]
            last_learner_kill = time.time()
        elif what == "link":
            name = rng.choice(LINKS)
            secs = rng.uniform(0.5, 6.0)
            relays[name].cut(secs)
            counts["link_cuts"] += 1
            log("link %s cut for %.1f s" % (name, secs))
        else:
            counts["garbage"] += send_garbage(port, rng, relays)
    for name in list(down):
        roles.start(Roles.role_of(name), name)
    return restart_step


# ---- the checks -----------------------------------------------------------------------------

def check_rss(roles, warm_t, end_t):
    """Per role: the largest of the last 15% of samples against the median of the samples
    in the 20 s after warm-up (bound: 1.5x + 64 MiB)."""
    out = {}
    span = end_t - warm_t
    for role in ("learner", "actor", "analyzer"):
        base = sorted(r for t, ro, _, r in roles.rss if ro == role and warm_t <= t <= warm_t + 20)
        last = [r for t, ro, _, r in roles.rss if ro == role and t >= end_t - 0.15 * span]
        assert base and last, ("no RSS samples for", role, len(base), len(last))
        med = base[len(base) // 2]
        bound = 1.5 * med + (64 << 20)
        assert max(last) <= bound, "%s grew: %.1f MiB at the end, %.1f MiB after warm-up" % (
            role, max(last) / 2**20, med / 2**20)
        out[role] = (med / 2**20, max(last) / 2**20)
    return out


def conservation(c, q):
    """G * received == trained + stale + lost after receipt + queued: the terms, and the
    difference (0 when it closes). Queued: hub and train queues, the step in training, and
    what analyzers held at the learner's last restart and have not returned yet
    (queues.orphan_dealt, lost as learner_restart when it expires)."""
    received = G * c["groups_received"]
    queued = G * (q["hub_backlog"] + q["train_groups"] + q["training_groups"]) + \
        q["orphan_dealt"]
    terms = {"trained": c["episodes_trained"], "stale": c["dropped_stale"],
             "lost_received": c["episodes_lost_received"], "queued": queued}
    return received, terms, received - sum(terms.values())


def main():
    tmp = tempfile.mkdtemp(prefix="seed-soak-")
    port = free_base_port()
    make_model(os.path.join(tmp, "model"))
    job = write_job(tmp, port)
    relays = {name: Relay(name, port + i, count=(name in ("groups_in", "telemetry")))
              for i, name in enumerate(LINKS)}
    stop = threading.Event()
    relay_t = threading.Thread(target=relay_loop, args=(list(relays.values()), stop), daemon=True)
    relay_t.start()
    roles = Roles(tmp, job, relays)
    rng = random.Random(SEED)
    log("chaos seed %d (replay: SEED_SOAK_SEED=%d), %.0f s of chaos, logs in %s" % (
        SEED, SEED, SECONDS, tmp))
    counts = {k: 0 for k in ("kills_actor", "kills_analyzer", "kills_learner", "SIGKILL",
                             "SIGTERM", "learner_SIGKILL", "link_cuts", "garbage")}
    ok = False
    try:
        roles.start("learner", "learner")
        for i in range(N_ANALYZERS):
            roles.start("analyzer", "analyzer-%d" % i)
        for i in range(N_ACTORS):
            roles.start("actor", "actor-%d" % i)
        wait_for("RL step 1 (warm)", lambda s: s["stage"] == "rl" and s["step"] >= 1, port, 300,
                 roles)
        warm_t = time.time() - T0
        restart_step = chaos(roles, port, relays, rng, SECONDS, counts)
        log("chaos over: %s" % counts)
        # 1. training advanced, also after the last learner restart
        for r in relays.values():
            r.down_until = 0
        st = status(port) or wait_for("the learner", lambda s: True, port, 240, roles)
        want = max(restart_step if restart_step is not None else 0, st["step"]) + 1
        st = wait_for("a step after the chaos (step %d)" % want,
                      lambda s: s["stage"] == "rl" and s["step"] >= want, port, 300, roles)
        end_t = time.time() - T0
        rss = check_rss(roles, warm_t, end_t)
        # 2. conservation: stop the producers, let the analyzers be forgotten
        for name in roles.live("actor"):
            roles.stop(name, signal.SIGTERM)
        for name in roles.live("analyzer"):
            roles.stop(name, signal.SIGTERM)
        st = wait_for("every peer forgotten", lambda s: not s["peers"], port, 60)
        time.sleep(0.5)
        final = seedctl_status(port)
        c, q = final["counts"], final["queues"]
        received, terms, diff = conservation(c, q)
        log("received %d episodes = %s + %d; lost by reason %s; rejected %s; socket counts %s" % (
            received, terms, diff, final["episodes_lost_by_reason"], final["rejected"],
            {k: v for k, v in final["sockets"].items()}))
        assert diff == 0, ("conservation does not close", received, terms, diff, c, q)
        sent, sent_terms = check_sent(relays, final, counts)
        # the learner stops with a final checkpoint; its persisted counters are the status'
        lrn_rc = roles.stop("learner", signal.SIGTERM)
        assert lrn_rc == 0, "the learner exited %s on SIGTERM:\n%s" % (lrn_rc, tail(tmp, "learner"))
        ck = os.path.join(tmp, "run", "ckpt")
        name = open(os.path.join(ck, "latest")).read().strip()
        state = json.load(open(os.path.join(ck, name, "trainer_state.json")))
        kept = state["counters"]
        keys = ("groups_received", "episodes_trained", "episodes_lost", "episodes_lost_received",
                "episodes_refused")
        for k in keys:  # the stopping learner may still train what it had queued
            assert kept.get(k, 0) >= c[k], ("persisted counter", k, kept.get(k), c[k])
        # 4. the final checkpoint resumes, with its counters and its queued groups
        roles.start("learner", "learner", "checkpoint.resume=true")
        # (the trainer thread requeues pending.bin's groups after the status socket binds:
        # the equation closes once they are back)
        st = wait_for("the final checkpoint resumed at step %d, its queued groups back" %
                      state["step"], lambda s: s["stage"] == "rl" and s["step"] >= state["step"]
                      and s["version"] >= state["version"] and
                      conservation(s["counts"], s["queues"])[2] == 0 and
                      sum(transit_terms(s["counts"], s["queues"],
                                        s["episodes_lost_by_reason"]).values()) == sent,
                      port, 120)
        back = st["counts"]  # from the checkpoint on (the resumed trainer may already have
        for k in keys:       # taken a step or dropped a stale group from its queue)
            assert back[k] >= kept.get(k, 0), ("resumed counter", k, back[k], kept.get(k))
        assert back["groups_received"] == kept["groups_received"], (back, kept)  # no actors
        assert back["dropped_stale"] >= kept.get("dropped_stale_hub", 0) + \
            kept.get("dropped_stale_train", 0), (back, kept)
        ok = True
        print("soak: seed %d, %.0f s of chaos: %d actor, %d analyzer and %d learner kills "
              "(%d SIGKILL, %d SIGTERM), %d link cuts, %d malformed messages sent and %d "
              "spliced into groups_out; steps %d; conservation: %d episodes received = %s; "
              "lost by reason %s; %d episodes sent by actors = %s; RSS MiB "
              "after warm-up -> end %s; resumed at step %d" % (
                  SEED, SECONDS, counts["kills_actor"], counts["kills_analyzer"],
                  counts["kills_learner"], counts["SIGKILL"], counts["SIGTERM"],
                  counts["link_cuts"], counts["garbage"], relays["groups_out"].injected,
                  state["step"], received, terms, final["episodes_lost_by_reason"], sent,
                  sent_terms,
                  {k: "%.0f -> %.0f" % v for k, v in rss.items()}, state["step"]))
    except AssertionError:
        names = sorted({n for _, n, _ in roles.all})
        for n in names:
            print("== %s\n%s" % (n, tail(tmp, n, 25)), file=sys.stderr)
        print("chaos seed %d (replay: SEED_SOAK_SEED=%d)" % (SEED, SEED), file=sys.stderr)
        raise
    finally:
        roles.stop_all()
        stop.set()
        relay_t.join(5)
        CTX.destroy(linger=0)
        if ok and not os.environ.get("SEED_KEEP_LOGS"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("logs kept in", tmp, file=sys.stderr)


def sent_by_actors(relays):
    """Episodes every actor incarnation sent on groups_in, as its link saw it: per (id,
    incarnation) the highest group seq seen whole on groups_in or the highest groups_sent
    of its heartbeats seen whole on telemetry (a group cut mid-message, or still in the
    actor's socket when it was killed, shows in the next heartbeat), times G."""
    gi, tel = relays["groups_in"], relays["telemetry"]
    with gi.lock, tel.lock:
        keys = set(gi.seq_max) | set(tel.hb_max)
        return G * sum(max(gi.seq_max.get(k, 0), tel.hb_max.get(k, 0)) for k in keys), len(keys)


def transit_terms(c, q, lost):
    """What the learner counts of what actors sent beyond what it received: groups lost in
    transit (reason `transit`: a cut link, a learner killed holding them or after its last
    checkpoint), numbered groups it received and refused (counts.episodes_refused), and
    groups known sent still in transit (queues.acks_pending, waiting for their grace)."""
    return {"received": G * c["groups_received"], "transit": lost.get("transit", 0),
            "refused": c.get("episodes_refused", 0), "in_transit": G * q.get("acks_pending", 0)}


def check_sent(relays, final, counts):
    """Exact conservation of what actors sent: every episode an actor incarnation sent on
    groups_in is received (then trained, stale, lost after receipt or queued: the received
    equation), refused by the validator, lost in transit, or still in transit; no gap."""
    sent, incs = sent_by_actors(relays)
    terms = transit_terms(final["counts"], final["queues"], final["episodes_lost_by_reason"])
    relay = relays["groups_in"]
    log("actors sent %d episodes (%d incarnations) = %s; groups_in relay: %d written whole to "
        "the learner, %d held when a cut dropped them, %d groups cut mid-message; %d learner "
        "SIGKILLs" % (sent, incs, terms, relay.sent_episodes, relay.cut_episodes,
                      relay.cut_partial, counts["learner_SIGKILL"]))
    assert sent == sum(terms.values()), ("episodes sent by actors != received + refused + lost "
                                         "in transit + in transit", sent, terms)
    return sent, terms


def ghost_deal(d, name, each=None):
    """An analyzer `name` that asks the hub for a group on groups_out (DEALER d, READY
    each second, after `each()` when given: its heartbeat) until the hub deals it one;
    without `each` it never says a word on telemetry and the learner knows it only by the
    groups it dealt it. Returns the group."""
    ready = envelope(name)
    ready.control.kind, ready.control.count = pb.Control.READY, 1
    t0 = time.time()
    while True:
        assert time.time() - t0 < 300, "no group dealt to %s in 300 s" % name
        if each:
            each()
        d.send(ready.SerializeToString())
        if d.poll(1000):
            break
    got = pb.Envelope()
    got.ParseFromString(d.recv())
    return got.episode_group


def scored(g, empty=False):
    """The ScoredGroup a ghost analyzer returns for group g: s = q = the sampling
    log-probs, or with `empty` every response emptied (no token left to train)."""
    sc = envelope("ghost")
    sg = sc.scored_group
    sg.group.CopyFrom(g)
    sg.scored_version, sg.analyzer_id = g.policy_version, "ghost"
    for ep in sg.group.episodes:
        a = sg.analyses.add()
        for stp in ep.steps:
            if empty:
                del stp.response_ids[:]
                del stp.sample_logprobs[:]
            x = a.steps.add()
            x.s.extend(stp.sample_logprobs)
            x.q.extend(stp.sample_logprobs)
    return sc.SerializeToString()


def ledger_case(body, *learner_args):
    """A deterministic ledger case: a learner (with learner_args) and actor-0 on loopback,
    in stage 2; body(roles, port, tmp, socket) runs the case (socket(type, port offset)
    connects a pyzmq socket closed at the end) and returns the line to print."""
    tmp = tempfile.mkdtemp(prefix="seed-ledger-")
    port = free_base_port()
    make_model(os.path.join(tmp, "model"))
    roles = Roles(tmp, write_job(tmp, port), {})
    roles.peer_args = lambda: []
    socks = []

    def socket(kind, offset):
        z = CTX.socket(kind)
        z.setsockopt(zmq.LINGER, 2000 if kind == zmq.PUSH else 0)
        z.connect("tcp://127.0.0.1:%d" % (port + offset))
        socks.append(z)
        return z
    ok = False
    try:
        roles.start("learner", "learner", *learner_args)
        roles.start("actor", "actor-0")
        wait_for("stage 2 with the actor", lambda s: s["stage"] == "rl" and any(
            p["id"] == "actor-0" for p in s["peers"]), port, 300, roles)
        print(body(roles, port, tmp, socket))
        ok = True
    except AssertionError:
        for n_ in sorted({n for _, n, _ in roles.all}):
            print("== %s\n%s" % (n_, tail(tmp, n_, 25)), file=sys.stderr)
        raise
    finally:
        for z in socks:
            z.close()
        roles.stop_all()
        CTX.destroy(linger=0)
        if ok and not os.environ.get("SEED_KEEP_LOGS"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("logs kept in", tmp, file=sys.stderr)


def ledger(roles, port, tmp, socket):
    """A group counted lost with its forgotten analyzer and then returned scored is not
    trained (it would be counted twice): rejected.not_dealt, and the equation closes."""
    tel = socket(zmq.PUSH, 4)
    hb = envelope("ghost")
    h = hb.heartbeat
    h.role, h.id, h.host, h.incarnation, h.pid = pb.ROLE_ANALYZER, "ghost", "h", 0x4747, 1
    g = ghost_deal(socket(zmq.DEALER, 1), "ghost", lambda: tel.send(hb.SerializeToString()))
    n = len(g.episodes)
    st = wait_for("ghost forgotten, its group lost", lambda s: all(
        p["id"] != "ghost" for p in s["peers"]) and s["counts"]["episodes_lost_received"] >= n,
        port, 60, roles)
    scored0, trained0 = st["counts"]["groups_scored"], st["counts"]["episodes_trained"]
    socket(zmq.PUSH, 2).send(scored(g))
    st = wait_for("the returned group dropped as not dealt",
                  lambda s: s["rejected"].get("not_dealt", 0) >= 1, port, 60, roles)
    assert st["counts"]["groups_scored"] == scored0, st["counts"]
    roles.stop("actor-0", signal.SIGTERM)
    st = wait_for("the actor forgotten", lambda s: not s["peers"], port, 60, roles)
    received, terms, diff = conservation(st["counts"], st["queues"])
    assert diff == 0 and st["counts"]["episodes_trained"] == trained0, \
        ("conservation", received, terms, diff)
    return ("ledger: a group lost with its forgotten analyzer and returned later was dropped "
            "(not_dealt), not trained; %d received = %s" % (received, terms))


# the ghost of the cases below stays known (never forgotten) for the whole case
LEDGER_KEEP = "wire.peer_timeout_ms=600000"


def ledger_unknown(roles, port, tmp, socket):
    """A group dealt to an analyzer the learner has not heard on telemetry yet (its READY
    came first: a restarted learner, a cut telemetry link) is in the checkpoint's ledger
    of what analyzers hold (dealt_outstanding), so a learner resumed from it counts it
    (queues.orphan_dealt) and the equation closes. The soak's chaos lost such a group
    once: the ledger summed only peers whose role a heartbeat had named."""
    g = ghost_deal(socket(zmq.DEALER, 1), "ghost")
    n = len(g.episodes)
    st = wait_for("the ghost in the peer table, holding its group", lambda s: any(
        p["id"] == "ghost" and p.get("outstanding") == n for p in s["peers"]), port, 60, roles)
    ghost = [p for p in st["peers"] if p["id"] == "ghost"][0]
    assert ghost["role"] not in ("analyzer", "actor"), ("the ghost's role is known", ghost)
    roles.stop("actor-0", signal.SIGTERM)
    rc = roles.stop("learner", signal.SIGTERM)
    assert rc == 0, "the learner exited %s on SIGTERM:\n%s" % (rc, tail(tmp, "learner"))
    ck = os.path.join(tmp, "run", "ckpt")
    name = open(os.path.join(ck, "latest")).read().strip()
    kept = json.load(open(os.path.join(ck, name, "trainer_state.json")))["counters"]
    assert kept.get("dealt_outstanding", 0) >= n, ("the checkpoint's ledger misses the "
                                                   "ghost's group", kept)
    roles.start("learner", "learner", LEDGER_KEEP, "checkpoint.resume=true")
    wait_for("the resumed learner", lambda s: s["stage"] == "rl", port, 120, roles)
    st = wait_for("the checkpoint's queued groups back",
                  lambda s: conservation(s["counts"], s["queues"])[2] == 0, port, 60, roles)
    received, terms, diff = conservation(st["counts"], st["queues"])
    assert st["queues"]["orphan_dealt"] >= n, ("the ghost's group is not orphaned", st["queues"])
    return ("ledger_unknown: a group dealt to an analyzer known only by its READY is in the "
            "checkpoint's ledger (dealt_outstanding %d) and the resumed learner's (orphan %d); "
            "%d received = %s" % (kept["dealt_outstanding"], st["queues"]["orphan_dealt"],
                                  received, terms))


def ledger_empty(roles, port, tmp, socket):
    """Groups taken by a step that makes no update (here: an analyzer returns its groups
    with every response emptied, so the step has no token to train) are counted lost
    (`step_empty`, received), not dropped from the books: the equation closes."""
    d, push = socket(zmq.DEALER, 1), socket(zmq.PUSH, 2)
    returned, t0 = 0, time.time()
    while True:  # each group dealt to the ghost goes back with no response token
        assert time.time() - t0 < 300, "no step_empty loss in 300 s"
        st = status(port)
        if st and st["episodes_lost_by_reason"].get("step_empty", 0) > 0:
            break
        push.send(scored(ghost_deal(d, "ghost"), empty=True))
        returned += 1
    roles.stop("actor-0", signal.SIGTERM)
    st = wait_for("the books closed, the ghost holding nothing",
                  lambda s: conservation(s["counts"], s["queues"])[2] == 0 and
                  all(p.get("outstanding", 0) == 0 for p in s["peers"]), port, 60, roles)
    received, terms, diff = conservation(st["counts"], st["queues"])
    assert st["counts"]["episodes_trained"] == 0, st["counts"]
    assert st["episodes_lost_by_reason"]["step_empty"] == terms["lost_received"], st
    return ("ledger_empty: %d groups returned with no response token; steps without an "
            "update counted %d episodes lost (step_empty); %d received = %s" % (
                returned, st["episodes_lost_by_reason"]["step_empty"], received, terms))


if CASE == "ledger":
    ledger_case(ledger)
elif CASE in ("ledger_unknown", "ledger_empty"):
    ledger_case(globals()[CASE], LEDGER_KEEP)
else:
    main()
