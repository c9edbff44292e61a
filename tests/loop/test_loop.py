"""The distributed actor-learner loop, end to end, with real processes on loopback.

usage: test_loop.py CASE BIN_DIR REPO

Every case writes a tiny random Qwen2 model (the shipped tiny tokenizer, 2 layers of
width 64) and a job file into a temp dir, starts the roles itself (or through seedctl),
watches the learner's status socket with an independent client (pyzmq + Google's
protobuf runtime, code generated from proto/seed.proto), and stops everything it
started. Every wait is bounded; nothing here asserts on speed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import zmq

CASE, BIN, REPO = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(REPO, "deploy", "envserver"))
import seedwire  # noqa: E402

pb = seedwire.load_pb2(os.environ.get("SEED_PB2_DIR"))
sys.path.insert(0, os.path.join(REPO, "tests", "http_analyzer"))
import fake_openai as FAKE  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests"))
import looptools  # noqa: E402
TOKENIZER = os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json")
PROCS = []


def free_base_port():
    """A base port whose six ports are all free on 127.0.0.1."""
    return looptools.free_base_port(hash(CASE))


def make_model(d):
    looptools.make_tiny_model(d, TOKENIZER)


def write_job(tmp, port, **over):
    job = {
        "job": {"name": "loop-" + CASE, "run_dir": os.path.join(tmp, "run"), "total_steps": 1000},
        "model": {"path": os.path.join(tmp, "model"), "init": "random", "threads": 1},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 2,
                  "options": {"room_size": "6", "boxes": "1"}}],
        "algorithm": {"mode": "seed", "group_size": 4, "stage0_steps": 1, "stage1_steps": 0,
                      "max_staleness": 64},
        "optim": {"groups_per_step": 0, "tokens_per_step": 1024, "micro_batch_tokens": 1024, "lr": 1e-4},
        "sampling": {"max_new_tokens": 8},
        "actor": {"episodes_in_flight": 4, "groups_in_flight": 1},
        "analyzer": {"skill_source": "oracle", "batch_tokens": 4096},
        "endpoints": {"host": "127.0.0.1", "base_port": port},
        "checkpoint": {"every": 1, "keep": 2},
        "wire": {"peer_timeout_ms": 4000, "max_msg_bytes": 4 << 20},
        "eval": {"every": 0, "episodes": 2, "batch": 2},
        "roles": {"actors": 2, "analyzers": 1, "stop_timeout_s": 60},
    }
    for key, value in over.items():
        sec, name = key.split("__")
        job[sec][name] = value
    if job["algorithm"]["mode"] in ("seed", "static_skills"):
        # a random model writes no <action> text: distil on every reply token, so the
        # distillation path (q, |q - s|, opd_adv) runs in these tests
        job["algorithm"].setdefault("opd_tokens", "response")
    path = os.path.join(tmp, "job.yaml")
    with open(path, "w") as f:
        json.dump(job, f, indent=1)  # JSON is YAML
    return path


def start(role, job, ident, tmp, *extra):
    log = open(os.path.join(tmp, ident + ".log"), "ab")
    p = subprocess.Popen([os.path.join(BIN, "seed-" + role), "--job", job, "--id", ident] +
                         list(extra), stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def stop_all():
    for p in PROCS:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    t0 = time.time()
    for p in PROCS:
        try:
            p.wait(timeout=max(1, 90 - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


CTX = zmq.Context()


def status(port, timeout_ms=3000):
    """One StatusRequest -> the parsed JSON, or None when nothing answers in time."""
    return looptools.status_request(CTX, pb, seedwire, port, "test-client", timeout_ms)


def wait_for(what, pred, port, timeout):
    t0 = time.time()
    last = None
    while time.time() - t0 < timeout:
        st = status(port)
        if st is not None:
            last = st
            if pred(st):
                print("  %.1f s: %s" % (time.time() - t0, what))
                return st
        time.sleep(0.3)
    raise AssertionError("timed out after %d s waiting for %s; last status: %s" %
                         (timeout, what, json.dumps(last)[:3000] if last else None))


def wait_for_log(tmp, ident, want, timeout):
    """Wait until ident's log holds the text want (the trainer thread logs after the
    status socket already answers)."""
    path = os.path.join(tmp, ident + ".log")
    t0 = time.time()
    text = ""
    while time.time() - t0 < timeout:
        text = open(path, errors="replace").read()
        if want in text:
            return
        time.sleep(0.2)
    raise AssertionError("timed out after %d s waiting for '%s' in %s:\n%s" %
                         (timeout, want, path, text[-2000:]))


def peers(st, role):
    return [p for p in st["peers"] if p["role"] == role]


def log_tail(tmp, n=30):
    out = []
    for name in sorted(os.listdir(tmp)):
        if name.endswith(".log"):
            with open(os.path.join(tmp, name), errors="replace") as f:
                out.append("== %s\n%s" % (name, "".join(f.readlines()[-n:])))
    return "\n".join(out)


def check_status_fields(st, n_actors, n_analyzers):
    for k in ("job", "mode", "stage", "step", "total_steps", "version", "uptime_s", "success",
              "throughput", "envs", "loss", "queues", "counts", "weights", "peers",
              "mean_abs_q_minus_s", "mean_q_minus_s", "learner"):
        assert k in st, "status lacks %s" % k
    tp = st["throughput"]
    for k in ("samples_per_s", "episodes_per_s", "env_steps_per_s"):
        assert tp[k] >= 0, (k, tp[k])
    for k in ("rollout", "scoring", "training"):
        assert tp["tokens_per_s"][k] >= 0, k
    assert st["throughput"]["tokens_per_s"]["rollout"] > 0, "no rollout throughput"
    sk = st["envs"]["sokoban"]
    assert 0.0 <= sk["success"] <= 1.0 and sk["episodes"] > 0 and -10 <= sk["return"] <= 11, sk
    for k in ("total", "pg", "opd", "kl", "entropy", "grad_norm", "clipfrac"):
        v = st["loss"][k]
        assert v == v and abs(v) < 1e6, (k, v)  # finite
    assert st["loss"]["grad_norm"] > 0
    for k in ("hub_backlog", "train_groups", "train_tokens"):
        assert st["queues"][k] >= 0
    c = st["counts"]
    assert c["groups_received"] >= c["groups_scored"] >= 1 and c["groups_trained"] >= 1, c
    assert c["malformed"] >= 0 and c["dropped_stale"] >= 0
    assert len(peers(st, "actor")) == n_actors and len(peers(st, "analyzer")) == n_analyzers, \
        st["peers"]
    for p in st["peers"]:
        assert p["heartbeat_age_s"] < 5 and p["version"] >= 1 and p["host"], p
    assert st["version"] >= 1 and st["weights"]["latest_version"] == st["version"]


# ---- cases ---------------------------------------------------------------------------------

def check_tensorboard(run, lines):
    """The run dir's TensorBoard event file holds every numeric field of every
    metrics.jsonl record, read back with TensorBoard's own loader."""
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(run, size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    want = {}
    for rec in lines:
        for k, v in rec.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                want.setdefault(k, []).append((rec["step"], v))
    assert set(want) <= tags, "missing in TensorBoard: %s" % sorted(set(want) - tags)
    for k, pts in want.items():
        got = [(e.step, e.value) for e in acc.Scalars(k)]
        assert len(got) == len(pts), (k, got, pts)
        for (s1, v1), (s2, v2) in zip(got, pts):
            assert s1 == int(s2) and abs(v1 - v2) <= 1e-6 * max(1.0, abs(v2)) + 1e-3 * (k == "time"), \
                (k, got, pts)


def case_launch(tmp, port):
    """seedctl launches learner + 2 actors + 1 analyzer; the job trains a few steps (stage 0,
    stage 1, then RL) and ends by itself; every actor runs each new weights version within
    a bound; the status JSON has every field with sane values; the checkpoint loads in
    transformers."""
    job = write_job(tmp, port, job__total_steps=6, algorithm__stage1_steps=1, eval__every=3)
    # a fixed training pool of 3 tasks: the evaluation also plays it
    cfg = json.load(open(job))
    cfg["envs"][0]["tasks"] = 3
    cfg["status"] = {"interval_s": 1.0}  # progress lines (not --quiet) once a second
    json.dump(cfg, open(job, "w"), indent=1)
    log = open(os.path.join(tmp, "seedctl.log"), "wb")
    ctl = subprocess.Popen([os.path.join(BIN, "seedctl"), "launch", job],
                           stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(ctl)
    first_seen, lag = {}, {}
    full = None
    t0 = time.time()
    while ctl.poll() is None:
        assert time.time() - t0 < 420, "the job did not finish in 420 s:\n" + log_tail(tmp)
        st = status(port, 1000)
        if st is None:
            time.sleep(0.3)
            continue
        now = time.time()
        v = st["version"]
        first_seen.setdefault(v, now)
        acts = peers(st, "actor")
        for ver, t in first_seen.items():
            if ver not in lag and len(acts) == 2 and all(p["version"] >= ver for p in acts):
                lag[ver] = now - t
        if st["step"] >= 1 and len(acts) == 2 and len(peers(st, "analyzer")) == 1:
            full = st
        time.sleep(0.2)
    assert ctl.returncode == 0, "seedctl exited %s:\n%s" % (ctl.returncode, log_tail(tmp))
    assert full is not None, "never saw a full status during the run"
    check_status_fields(full, 2, 1)
    # Bound: heartbeats each second, receivers poll every 200 ms, and actors swap weights
    # between two decode steps (under ASan a prefill of a few prompts takes seconds).
    # Versions published in the last 10 s of the run may end with it before actors poll.
    t_end = time.time()
    missing = [v for v, t in first_seen.items() if v not in lag and t < t_end - 10]
    assert not missing, "actors never reported versions %s (lags %s)" % (missing, lag)
    assert lag, "no version was followed by the actors"
    worst = max(lag.values())
    assert worst < 30, "an actor took %.1f s to run a new version: %s" % (worst, lag)
    run = os.path.join(tmp, "run")
    lines = [json.loads(x) for x in open(os.path.join(run, "metrics.jsonl"))]
    rl = [x for x in lines if x["stage"] == 2 and "loss" in x]
    assert len(rl) >= 6 and rl[-1]["step"] == 6, lines[-3:]
    # mode seed with the oracle's skills: the distillation term is in the advantage
    assert any(x["opd_adv"] > 0 for x in rl), rl[-2:]
    # periodic evaluation: before the first step, every 3 steps, the final one once
    ev = [x for x in lines if "eval_success" in x]
    assert [x["step"] for x in ev] == [0, 3, 6], ev
    for x in ev:
        assert x["eval_episodes"] == 2 and 0 <= x["eval_success"] <= 1, x
        assert "eval/success/sokoban" in x and "eval/success/sokoban/sokoban" in x, x
        assert 0 <= x["eval_pool_success"] <= 1, x
        assert x["eval_pool/success/sokoban"] == x["eval_pool_success"], x
    report = json.load(open(os.path.join(run, "eval.json")))
    assert report["step"] == 6 and report["envs"][0]["env"] == "sokoban", report
    # the pool part names the actors' pool: the env's split, the job's seed, 3 tasks
    pool = report["pool"]["envs"][0]
    assert report["pool"]["episodes"] == 3 and pool["episodes"] == 3, report
    assert pool["split"] == "train" and pool["seed"] == cfg["job"].get("seed", 1), report
    printed = open(os.path.join(tmp, "seedctl.log")).read()
    assert "training-pool success %.3f at step 0" % ev[0]["eval_pool_success"] in printed, \
        printed[-2000:]
    # the progress line shows the first evaluation -> the latest, on the pool too
    first = "eval %.3f->" % ev[0]["eval_success"]
    pool0 = " pool %.3f->" % ev[0]["eval_pool_success"]
    shown = [x for x in printed.splitlines() if first in x and pool0 in x and " @" in x]
    assert shown, printed[-3000:]
    check_tensorboard(run, lines)
    ckpt = os.path.join(run, "ckpt", open(os.path.join(run, "ckpt", "latest")).read().strip())
    state = json.load(open(os.path.join(ckpt, "trainer_state.json")))
    assert state["step"] == 6 and state["stage"] == 2, state
    import torch
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32)
    ids = torch.tensor([[5, 17, 300, 2]])
    assert torch.isfinite(m(ids).logits).all()
    print("launch: 6 RL steps; worst weights lag %.1f s over %d versions; checkpoint loads "
          "in transformers" % (worst, len(lag)))


def case_actor_churn(tmp, port):
    """kill -9 an actor mid-run: the learner keeps training and forgets it; a new actor
    started mid-run gets the latest weights whole and its episodes are trained on."""
    job = write_job(tmp, port)
    start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    a = start("actor", job, "actor-a", tmp)
    start("actor", job, "actor-b", tmp)
    st = wait_for("RL step 1 with both actors", lambda s: s["stage"] == "rl" and s["step"] >= 1 and
                  len(peers(s, "actor")) == 2, port, 240)
    # Kill it while it holds episodes: frozen (SIGSTOP) it cannot deliver them, so when the
    # learner's view of it says episodes in flight, SIGKILL leaves them lost. A fast loop
    # can find it between groups: thaw it and look again (bounded).
    for attempt in range(100):
        a.send_signal(signal.SIGSTOP)
        st = wait_for("actor-a frozen", lambda s: True, port, 30)
        held = [p["in_flight"] for p in st["peers"] if p["id"] == "actor-a"]
        if held and held[0] >= 1:
            break
        a.send_signal(signal.SIGCONT)
        time.sleep(0.2)
    else:
        raise AssertionError("actor-a never held episodes in flight when looked at")
    a.kill()
    a.wait()
    step0 = st["step"]
    st = wait_for("actor-a forgotten", lambda s: all(p["id"] != "actor-a" for p in s["peers"]),
                  port, 60)
    assert st["counts"]["peers_lost"] >= 1, st["counts"]
    assert st["counts"]["episodes_lost"] >= 1, "the dead actor's episodes were not counted"
    wait_for("training to go on without actor-a", lambda s: s["step"] >= step0 + 2, port, 240)
    start("actor", job, "actor-c", tmp)
    st = wait_for("actor-c on the latest weights",
                  lambda s: any(p["id"] == "actor-c" and p["version"] == s["version"]
                                for p in s["peers"]), port, 120)
    st = wait_for("an actor-c group trained on",
                  lambda s: any(p["id"] == "actor-c" and p["groups_trained"] >= 1
                                for p in s["peers"]), port, 240)
    print("actor_churn: dead actor forgotten (%d episodes lost), training went on, the new "
          "actor's groups were trained on at step %d; counts %s" % (
              st["counts"]["episodes_lost"], st["step"], st["counts"]))


def case_learner_restart(tmp, port):
    """kill -9 the learner and restart it from its checkpoint: it resumes at the step and
    weights version of that checkpoint, and actors and analyzers reconnect by themselves."""
    job = write_job(tmp, port)
    lrn = start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    start("actor", job, "actor-0", tmp)
    wait_for("RL step 2", lambda s: s["stage"] == "rl" and s["step"] >= 2, port, 240)
    lrn.kill()
    lrn.wait()
    ck = os.path.join(tmp, "run", "ckpt")
    ckpt = os.path.join(ck, open(os.path.join(ck, "latest")).read().strip())
    state = json.load(open(os.path.join(ckpt, "trainer_state.json")))
    start("learner", job, "learner", tmp, "checkpoint.resume=true")
    seen = []

    def resumed(s):
        # Every reply of the restarted learner shows one moment: never the checkpoint's
        # step (or more) beside a version older than the checkpoint's.
        seen.append((s["stage"], s["step"], s["version"]))
        assert s["stage"] != "rl" or s["version"] >= state["version"], (seen, state)
        return s["stage"] == "rl" and s["step"] >= state["step"]

    wait_for("the restarted learner at its checkpoint", resumed, port, 120)
    want = "stage 2, step %d, version %d" % (state["step"], state["version"])
    wait_for_log(tmp, "learner", want, 60)
    st = wait_for("actor and analyzer back on the new learner's weights",
                  lambda s: len(s["peers"]) == 2 and
                  all(p["version"] >= state["version"] for p in s["peers"]), port, 120)
    st = wait_for("training after the restart",
                  lambda s: s["step"] >= state["step"] + 2, port, 240)
    print("learner_restart: resumed at step %d version %d; step %d after reconnection" %
          (state["step"], state["version"], st["step"]))


def case_learner_ckpt_cadence(tmp, port):
    """Checkpoints written during the run protect it: with the step rule out of reach
    (checkpoint.every 1000) the time rule (every_minutes) and the warm-start stage ends
    checkpoint. kill -9 the learner in the warm start: it continues the warm start from
    its checkpoint's sft_steps; kill -9 it in RL: it resumes at a step-N checkpoint that
    the time rule wrote during the run (N >= 1), not from scratch."""
    s0, s1 = 2, 30
    job = write_job(tmp, port, algorithm__stage0_steps=s0, algorithm__stage1_steps=s1,
                    checkpoint__every=1000, checkpoint__every_minutes=0.02)
    ck = os.path.join(tmp, "run", "ckpt")

    def latest():
        try:
            return open(os.path.join(ck, "latest")).read().strip()
        except OSError:
            return ""

    def wait_latest(what, pred, timeout):
        t0 = time.time()
        while time.time() - t0 < timeout:
            name = latest()
            if pred(name):
                return name
            time.sleep(0.1)
        raise AssertionError("timed out after %d s waiting for %s; latest: %r\n%s" %
                             (timeout, what, latest(), log_tail(tmp)))

    def resumed_line(log_name):
        text = open(os.path.join(tmp, log_name), errors="replace").read()
        lines = [x for x in text.splitlines() if "resumed from" in x]
        assert lines, "the learner did not resume:\n" + text[-2000:]
        return lines[-1]

    lrn = start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    start("actor", job, "actor-0", tmp)
    # 1. a warm-start checkpoint past stage 0's end, then kill -9 while still warm
    # (a later one than stage 0's end: that one's log line is then written too)
    wait_latest("a warm-start checkpoint after stage 0's end",
                lambda n: n.startswith("sft-") and int(n[4:]) > s0, 240)
    lrn.kill()
    lrn.wait()
    name = latest()
    assert name.startswith("sft-"), "the warm start ended before the kill (latest %s)" % name
    sft = int(name[4:])
    text = open(os.path.join(tmp, "learner.log"), errors="replace").read()
    assert "ckpt/sft-%d (" % s0 in text, "no checkpoint at stage 0's end:\n" + text[-2000:]
    lrn = start("learner", job, "learner", tmp, "checkpoint.resume=true")
    seen = []

    def warm_resumed(s):
        # from its first reply on, the restarted learner is at or past the checkpoint
        seen.append((s["stage"], s["sft_steps"], s["step"]))
        assert s["sft_steps"] >= sft, ("the warm start went back", sft, seen)
        return s["stage"] == "rl"

    wait_for("the warm start continued from sft-%d and ended" % sft, warm_resumed, port, 300)
    line = resumed_line("learner.log")
    stage = 1  # the checkpoint is past stage 0's end
    assert "ckpt/sft-%d: stage %d, step 0, version 0" % (sft, stage) in line, line
    # 2. a stage-2 checkpoint that the time rule wrote during RL, then kill -9
    step_name = wait_latest("a step-N checkpoint with N >= 1 written during RL",
                            lambda n: n.startswith("step-") and int(n[5:]) >= 1, 300)
    lrn.kill()
    lrn.wait()
    name = latest()
    assert name.startswith("step-") and int(name[5:]) >= 1, name
    state = json.load(open(os.path.join(ck, name, "trainer_state.json")))
    text = open(os.path.join(tmp, "learner.log"), errors="replace").read()
    assert "reached total_steps" not in text, text[-2000:]
    start("learner", job, "learner", tmp, "checkpoint.resume=true")
    seen = []

    def rl_resumed(s):
        # never from scratch: no warm start again, never behind the checkpoint
        seen.append((s["stage"], s["step"], s["version"]))
        assert s["stage"] == "rl" and s["step"] >= state["step"], ("not resumed", state, seen)
        return s["step"] >= state["step"] + 1

    wait_for("training on from %s" % name, rl_resumed, port, 300)
    line = resumed_line("learner.log")
    want = "ckpt/%s: stage 2, step %d, version %d" % (name, state["step"], state["version"])
    assert want in line, (want, line)
    print("learner_ckpt_cadence: killed in the warm start, continued from sft-%d; killed in "
          "RL, resumed from %s (first seen %s), written by the time rule during the run" %
          (sft, name, step_name))


def case_garbage(tmp, port):
    """Garbage, truncated, oversized, wrong-schema and unexpected messages sent to every
    socket the learner binds that receives: each is counted and dropped; the job goes on."""
    job = write_job(tmp, port)
    start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    start("actor", job, "actor-0", tmp)
    st = wait_for("RL step 1", lambda s: s["stage"] == "rl" and s["step"] >= 1, port, 240)
    before = st["sockets"]
    good = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="garbage")
    good.heartbeat.id = "x"
    raw = good.SerializeToString()
    wrong = pb.Envelope(schema=99, sender="garbage")
    wrong.episode_group.env = "sokoban"
    big = b"\x0a" + b"\xff" * (6 << 20)  # past the job's 4 MiB bound, under the transport's 8
    msgs = {  # what each message should count as
        "malformed": [os.urandom(300), raw[:-3] + b"\xff\xff\xff", b"\xff" * 64],
        "wrong_version": [wrong.SerializeToString()],
        "oversized": [big],
    }
    sent = 0
    for name, off in (("groups_in", 0), ("scored_in", 2), ("telemetry", 4)):
        s = CTX.socket(zmq.PUSH)
        s.setsockopt(zmq.LINGER, 60000)  # groups_in reads only when the hub has room
        s.connect("tcp://127.0.0.1:%d" % (port + off))
        for kind in msgs.values():
            for m in kind:
                s.send(m)
                sent += 1
        if name != "telemetry":
            s.send(raw)  # a heartbeat on a data socket: unexpected type
        s.close()
    for off in (5, 3, 1):  # status, weights and groups_out: ROUTERs
        s = CTX.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 60000)  # groups_in reads only when the hub has room
        s.connect("tcp://127.0.0.1:%d" % (port + off))
        for m in msgs["malformed"] + msgs["wrong_version"]:
            s.send(m)
        s.close()

    def counted(s):
        k = s["sockets"]
        for name in ("groups_in", "scored_in", "telemetry"):
            if k[name]["malformed"] - before[name]["malformed"] < 3 or \
               k[name]["wrong_version"] - before[name]["wrong_version"] < 1 or \
               k[name]["oversized"] - before[name]["oversized"] < 1:
                return False
        for name in ("groups_in", "scored_in"):
            if k[name]["unexpected_type"] - before[name]["unexpected_type"] < 1:
                return False
        if k["status"]["malformed"] + k["status"]["wrong_version"] - \
           before["status"]["malformed"] - before["status"]["wrong_version"] < 4:
            return False
        if k["groups_out"]["malformed"] + k["groups_out"]["wrong_version"] - \
           before["groups_out"]["malformed"] - before["groups_out"]["wrong_version"] < 4:
            return False
        return k["weights"]["malformed"] - before["weights"]["malformed"] >= 4

    st = wait_for("every bad message counted", counted, port, 60)
    step = st["step"]
    wait_for("the job going on", lambda s: s["step"] >= step + 2, port, 240)
    for p in PROCS:
        assert p.poll() is None, "a role died after garbage:\n" + log_tail(tmp)
    print("garbage: %d bad messages counted per socket kind and dropped; training went on" % sent)


def case_python_client(tmp, port):
    """An independent client (pyzmq + Google's protobuf, code generated from the .proto)
    reads the status socket and decodes an EpisodeGroup that an actor sent."""
    from tokenizers import Tokenizer
    job = write_job(tmp, port, algorithm__stage0_steps=0)
    start("learner", job, "learner", tmp)
    start("actor", job, "actor-0", tmp)
    st = wait_for("the actor", lambda s: len(peers(s, "actor")) == 1, port, 120)
    assert st["job"] == "loop-python_client"
    # Take the analyzer's place on the hub: ask for a group (READY), the learner deals it.
    s = CTX.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("tcp://127.0.0.1:%d" % (port + 1))
    ready = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="test-analyzer")
    ready.control.kind = pb.Control.READY
    ready.control.count = 1
    s.send(ready.SerializeToString())
    assert s.poll(240000), "no episode group within 240 s:\n" + log_tail(tmp)
    env = pb.Envelope()
    env.ParseFromString(s.recv())
    s.close()
    assert env.schema == seedwire.SCHEMA_VERSION and env.WhichOneof("body") == "episode_group"
    g = env.episode_group
    assert g.env == "sokoban" and g.actor_id == "actor-0" and g.policy_version >= 1, g.env
    assert len(g.episodes) == 4
    tok = Tokenizer.from_file(TOKENIZER)
    for ep in g.episodes:
        assert 1 <= len(ep.steps) <= 2 and ep.sample_seed != 0
        assert abs(ep.episode_return - sum(x.reward for x in ep.steps)) < 1e-4
        for stp in ep.steps:
            assert len(stp.response_ids) == len(stp.sample_logprobs) >= 1
            assert all(lp <= 1e-6 for lp in stp.sample_logprobs)
            assert 0 < stp.skill_slot_episode <= stp.skill_slot_step < len(stp.prompt_ids)
            text = tok.decode(list(stp.prompt_ids), skip_special_tokens=False)
            assert text.startswith("<|im_start|>system\n") and "<|im_start|>user\n" in text
            assert text.endswith("<|im_start|>assistant\n")
            assert stp.observation.strip() and stp.observation.strip()[:20] in text
            head = tok.decode(list(stp.prompt_ids[:stp.skill_slot_episode]),
                              skip_special_tokens=False)
            assert "task" in head.lower(), head[-200:]
    print("python_client: status read; an EpisodeGroup of %d episodes decoded and checked "
          "against the tokenizer" % len(g.episodes))


def case_temperature(tmp, port):
    """sampling.temperature 0.7 end to end (issue 7 item 8). The model has spread-out logits
    (random weights of std 0.1 saved by transformers, loaded with model.init: load), so the
    log-probs at T = 1 and at T = 0.7 differ by tenths. A tap keeps the scored groups: the
    analyzer scores s at the actor's temperature, so where it held the sampling version s
    equals the actor's logged sampling log-probs. The learner's first RL step is on-policy
    (version 1 samples, version 1 weights) and trains at the same T: its PPO KL to the
    behaviour log-probs is ~0 and no token is clipped."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = json.load(open(os.path.join(tmp, "model", "config.json")))
    torch.manual_seed(3)
    model = Qwen2ForCausalLM(Qwen2Config(**{k: v for k, v in cfg.items()
                                            if k not in ("architectures", "torch_dtype")}))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.1 if p.ndim == 2 else 1.0 + 0.1 * torch.randn_like(p))
    model.save_pretrained(os.path.join(tmp, "model"), safe_serialization=True)
    tap = ScoredTap(port)
    try:
        job = write_job(tmp, port, algorithm__stage0_steps=0, model__init="load",
                        sampling__temperature=0.7)
        start("learner", job, "learner", tmp)
        start("analyzer", job, "analyzer-0", tmp, *tap.args())
        start("actor", job, "actor-0", tmp)
        wait_for("2 RL steps", lambda s: s["step"] >= 2 and len(tap.scored) >= 2, port, 300)
        n, worst = 0, 0.0
        for g in list(tap.scored):
            if g.scored_version != g.group.policy_version:
                continue
            for an, ep in zip(g.analyses, g.group.episodes):
                for sc, stp in zip(an.steps, ep.steps):
                    assert len(sc.s) == len(stp.sample_logprobs), "s and the sampling log-probs"
                    for a, b in zip(sc.s, stp.sample_logprobs):
                        worst = max(worst, abs(a - b))
                        n += 1
        # fp32 through two code paths (KV-cache decode, one packed scoring pass)
        assert n > 0, "no group scored at its sampling version"
        assert worst < 2e-3, "s differs from the sampling log-probs by %g" % worst
        lines = [json.loads(x) for x in open(os.path.join(tmp, "run", "metrics.jsonl"))]
        first = [x for x in lines if x["stage"] == 2][0]
        assert abs(first["ppo_kl"]) < 1e-3 and first["clipfrac"] == 0, first
        print("temperature: s = sampling log-probs at T 0.7 over %d tokens (max |diff| %.2g); "
              "first RL step ppo_kl %.2g, clipfrac %g" % (n, worst, first["ppo_kl"],
                                                          first["clipfrac"]))
    finally:
        tap.close()


def http_job(tmp, port, srv, mode, **over):
    """A job whose skills come from the fake OpenAI server (tests/http_analyzer) in `mode`."""
    os.environ["SEED_LOOP_HTTP_KEY"] = FAKE.KEY  # inherited by the roles started below
    return write_job(tmp, port, analyzer__skill_source="http",
                     analyzer__http_endpoint=srv.base(mode), analyzer__http_model="fake-model",
                     analyzer__http_api_key_env="SEED_LOOP_HTTP_KEY", analyzer__http_retries=1,
                     analyzer__http_backoff_ms=10, **over)


class ScoredTap:
    """Sits between the learner and an analyzer on groups-out and scored-in: forwards both
    ways unchanged and keeps every ScoredGroup the analyzer sent."""

    def __init__(self, port):
        import threading
        self.router = CTX.socket(zmq.ROUTER)
        self.pull = CTX.socket(zmq.PULL)
        self.ports = (self.router.bind_to_random_port("tcp://127.0.0.1"),
                      self.pull.bind_to_random_port("tcp://127.0.0.1"))
        self.dealer = CTX.socket(zmq.DEALER)
        self.dealer.connect("tcp://127.0.0.1:%d" % (port + 1))
        self.push = CTX.socket(zmq.PUSH)
        self.push.connect("tcp://127.0.0.1:%d" % (port + 2))
        for s in (self.router, self.pull, self.dealer, self.push):
            s.setsockopt(zmq.LINGER, 0)
        self.scored, self.analyzer = [], None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def args(self):
        return ["endpoints.groups_out=tcp://127.0.0.1:%d" % self.ports[0],
                "endpoints.scored_in=tcp://127.0.0.1:%d" % self.ports[1]]

    def run(self):
        poller = zmq.Poller()
        for s in (self.router, self.pull, self.dealer):
            poller.register(s, zmq.POLLIN)
        while not self.stop.is_set():
            for s, _ in poller.poll(200):
                if s is self.router:  # an analyzer asks for work (READY)
                    self.analyzer, msg = self.router.recv_multipart()
                    self.dealer.send(msg)
                elif s is self.dealer and self.analyzer is not None:  # the hub deals a group
                    self.router.send_multipart([self.analyzer, self.dealer.recv()])
                elif s is self.pull:
                    msg = self.pull.recv()
                    env = pb.Envelope()
                    env.ParseFromString(msg)
                    self.scored.append(env.scored_group)
                    self.push.send(msg)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        for s in (self.router, self.pull, self.dealer, self.push):
            s.close()


def case_http_analyzer(tmp, port):
    """skill_source http end to end: stage-1 labels and stage-2 skills come from a fake
    OpenAI server on loopback. Stage 1 labels the expert's episodes here
    (algorithm.stage1_episodes expert): every step of the trajectories the server is
    shown has an action, which the random policy never writes. A tap between the
    learner and the analyzer shows every skill of the scored groups is the server's
    (source SKILL_HTTP, with q scores) and the learner trains on them; then an analyzer
    whose endpoint answers HTTP 500 falls back to the sokoban oracle (SKILL_ORACLE), and
    its fallback count shows in status."""
    srv = FAKE.FakeOpenAI()
    tap = ScoredTap(port)
    try:
        job = http_job(tmp, port, srv, "good", algorithm__stage0_steps=0,
                       algorithm__stage1_steps=1, algorithm__stage1_episodes="expert")
        start("learner", job, "learner", tmp)
        st = wait_for("stage 2 after http stage-1 labels", lambda s: s["stage"] == "rl", port, 240)
        c = st["counts"]
        labels = srv.of("good")
        assert c["stage1_http_labels"] >= 1 and c["stage1_skill_fallbacks"] == 0, c
        assert len(labels) == c["stage1_http_labels"], (len(labels), c)
        for r in labels:
            b = r["body"]
            assert r["auth"] == "Bearer " + FAKE.KEY and b["model"] == "fake-model", r
            assert [m["role"] for m in b["messages"]] == ["system", "user"], b
            assert "Trajectory:\nStep 1 observation:" in b["messages"][1]["content"], b
            acts = re.findall(r"\nStep \d+ action: (.*) \(reward", b["messages"][1]["content"])
            assert acts and "(invalid reply)" not in acts, acts  # the expert's actions
        # The stage-2 endpoint adds a repeated step 1 and a step 40 to the skill: the
        # analyzer keeps the lines of steps the episode took (a repeated number once), so
        # no scored group is refused for more step skills than steps.
        ana = start("analyzer", job, "analyzer-http", tmp, *tap.args(),
                    "analyzer.http_endpoint=" + srv.base("extrasteps"))
        start("actor", job, "actor-0", tmp)

        def http_groups():
            return [g for g in tap.scored if g.analyzer_id == "analyzer-http"]
        st = wait_for("2 RL steps on http skills", lambda s: s["step"] >= 2 and
                      len(http_groups()) >= 2, port, 300)
        assert not st["rejected"].get("too_many"), st["rejected"]
        want = FAKE.SKILL[len("<skill>"):-len("</skill>")].split("\n")
        for g in http_groups():
            assert len(g.analyses) == len(g.group.episodes) == 4
            for an, ep in zip(g.analyses, g.group.episodes):
                assert an.source == pb.SKILL_HTTP, an.source
                steps = want[1:1 + len(ep.steps)]  # "step 1: ...", "step 2: ..."
                assert an.skill == want[0] and list(an.step_skills) == steps, \
                    (an.skill, list(an.step_skills), len(ep.steps))
                assert len(an.skill_ids) > 0
                for sc, stp in zip(an.steps, ep.steps):
                    assert len(sc.q) == len(sc.s) == len(stp.response_ids), "no q for a step"
        n_http = len(srv.of("extrasteps"))
        assert n_http >= 4 * len(http_groups()), (n_http, len(http_groups()))
        lines = [json.loads(x) for x in open(os.path.join(tmp, "run", "metrics.jsonl"))]
        rl = [x for x in lines if x["stage"] == 2 and "loss" in x]
        assert any(x["mean_abs_q_minus_s"] > 0 and x["opd_adv"] > 0 for x in rl), rl[-2:]
        assert all(abs(x["mean_q_minus_s"]) <= x["mean_abs_q_minus_s"] + 1e-9 for x in rl), rl[-2:]
        a = [p for p in peers(st, "analyzer") if p["id"] == "analyzer-http"]
        assert a and a[0]["skill_fallbacks"] == 0, a

        # The endpoint answers 500: every skill falls back to the oracle, counted.
        ana.send_signal(signal.SIGTERM)
        ana.wait(timeout=90)
        start("analyzer", job, "analyzer-fail", tmp, *tap.args(),
              "analyzer.http_endpoint=" + srv.base("always500"))

        def fail_groups():
            return [g for g in tap.scored if g.analyzer_id == "analyzer-fail"]
        st = wait_for("fallbacks counted in status", lambda s: len(fail_groups()) >= 1 and any(
            p["id"] == "analyzer-fail" and p["skill_fallbacks"] >= 4 for p in s["peers"]),
            port, 300)
        fb = [p for p in st["peers"] if p["id"] == "analyzer-fail"][0]["skill_fallbacks"]
        for g in fail_groups():
            for an in g.analyses:
                assert an.source == pb.SKILL_ORACLE and (an.skill or an.step_skills), an
        assert len(srv.of("always500")) >= 2 * 4, len(srv.of("always500"))  # retries: 1
        step = st["step"]
        wait_for("training on fallback skills", lambda s: s["step"] >= step + 1, port, 240)
        text = open(os.path.join(tmp, "analyzer-fail.log"), errors="replace").read()
        assert "fell back to the env's oracle" in text and "answered HTTP 500" in text, text[-2000:]
        print("http_analyzer: %d stage-1 labels and %d skills from the endpoint (SKILL_HTTP, "
              "%d groups), %d fallbacks to the oracle with the endpoint answering 500" %
              (len(labels), n_http, len(http_groups()), fb))
    finally:
        tap.close()
        srv.stop()


def case_http_stage1(tmp, port):
    """skill_source http, stage 1, the endpoint answering 500: the learner's stage-1 labels
    fall back to the oracle, counted in status, and stage 1 still finishes. The episodes
    are the policy's own (algorithm.stage1_episodes policy, the default): the random
    model writes no action in 8 tokens, so every step the server is shown is an invalid
    reply, where the expert's episodes have an action at every step (case_http_analyzer)."""
    srv = FAKE.FakeOpenAI()
    try:
        job = http_job(tmp, port, srv, "always500", algorithm__stage0_steps=0,
                       algorithm__stage1_steps=1)
        start("learner", job, "learner", tmp)
        st = wait_for("stage 2 after stage 1", lambda s: s["stage"] == "rl", port, 240)
        c = st["counts"]
        assert c["stage1_skill_fallbacks"] >= 1 and c["stage1_http_labels"] == 0, c
        assert len(srv.of("always500")) == 2 * c["stage1_skill_fallbacks"], \
            (len(srv.of("always500")), c)
        for r in srv.of("always500"):
            text = r["body"]["messages"][1]["content"]
            acts = re.findall(r"\nStep \d+ action: (.*) \(reward", text)
            assert acts and set(acts) == {"(invalid reply)"}, acts  # the policy's replies
        text = open(os.path.join(tmp, "learner.log"), errors="replace").read()
        assert "fell back to the oracle" in text and "answered HTTP 500" in text, text[-2000:]
        print("http_stage1: %d stage-1 labels fell back to the oracle" %
              c["stage1_skill_fallbacks"])
    finally:
        srv.stop()


def take_group(port, timeout_s):
    """Take the analyzer's place on the hub once (READY): the EpisodeGroup it deals."""
    s = CTX.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("tcp://127.0.0.1:%d" % (port + 1))
    ready = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="test-analyzer")
    ready.control.kind = pb.Control.READY
    ready.control.count = 1
    s.send(ready.SerializeToString())
    try:
        assert s.poll(timeout_s * 1000), "no episode group within %d s" % timeout_s
        env = pb.Envelope()
        env.ParseFromString(s.recv())
        assert env.WhichOneof("body") == "episode_group"
        return env.episode_group
    finally:
        s.close()


def rl_metrics(tmp):
    lines = [json.loads(x) for x in open(os.path.join(tmp, "run", "metrics.jsonl"))]
    return [x for x in lines if x["stage"] == 2 and "loss" in x]  # steps, not evaluations


def case_skill_prompt(tmp, port):
    """algorithm.mode skill_prompt and no other skill key: the shipped library of the env
    (deploy/skills/sokoban.json) is found; the actor's acting prompts carry its episode
    skill in the episode slot, and those prompt ids are what the group ships; the analyzer
    writes no skill and scores no q, the learner has no OPD term; RL reaches step 2."""
    from tokenizers import Tokenizer
    job = write_job(tmp, port, algorithm__mode="skill_prompt", analyzer__skill_source="self")
    start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    start("actor", job, "actor-0", tmp)
    st = wait_for("RL step 2", lambda s: s["stage"] == "rl" and s["step"] >= 2, port, 300)
    assert st["mode"] == "skill_prompt", st["mode"]
    lib = json.load(open(os.path.join(REPO, "deploy", "skills", "sokoban.json")))
    skill = lib["skills"]["sokoban"]["episode"]
    g = take_group(port, 240)
    tok = Tokenizer.from_file(TOKENIZER)
    for ep in g.episodes:
        for stp in ep.steps:
            text = tok.decode(list(stp.prompt_ids), skip_special_tokens=False)
            assert skill in text, text[-600:]
            mid = tok.decode(list(stp.prompt_ids[stp.skill_slot_episode:stp.skill_slot_step]),
                             skip_special_tokens=False)
            assert skill in mid, "the skill is not in the episode slot: " + mid[:300]
    rl = rl_metrics(tmp)
    assert rl and all(x["mean_abs_q_minus_s"] == 0 and x["opd"] == 0 and
                      x.get("opd_adv", 0) == 0 for x in rl), rl[-2:]
    print("skill_prompt: step %d; every acting prompt of a group carries the library's "
          "episode skill in its slot; no q, no OPD term" % st["step"])


def case_modes(tmp, port):
    """grpo and seed with self-written skills (the policy as its own analyzer), each a short
    real run: the distillation term (opd_adv, |q - s|) is zero on every step of grpo and
    non-zero in seed; both train past step 2."""
    for mode, seen in (("grpo", False), ("seed", True)):
        sub = os.path.join(tmp, mode)
        shutil.copytree(os.path.join(tmp, "model"), os.path.join(sub, "model"))
        job = write_job(sub, port, algorithm__mode=mode, analyzer__skill_source="self",
                        analyzer__max_skill_tokens=24)
        procs = [start("learner", job, "learner", sub), start("analyzer", job, "analyzer-0", sub),
                 start("actor", job, "actor-0", sub)]
        st = wait_for(mode + " RL step 3", lambda s: s["stage"] == "rl" and s["step"] >= 3,
                      port, 300)
        assert st["mode"] == mode, st["mode"]
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=120)
        rl = rl_metrics(sub)
        assert len(rl) >= 3, rl
        if seen:
            assert any(x["opd_adv"] > 0 and x["mean_abs_q_minus_s"] > 0 for x in rl), rl[-2:]
        else:
            assert all(x["opd_adv"] == 0 and x["mean_abs_q_minus_s"] == 0 and x["opd"] == 0
                       for x in rl), rl[-2:]
        print("modes: %s trained %d steps; opd_adv %s" %
              (mode, len(rl), [round(x["opd_adv"], 4) for x in rl]))


def case_static_skills(tmp, port):
    """algorithm.mode static_skills and no other skill key: the analyzer takes each
    episode's teacher context from the shipped library (source SKILL_LIBRARY) and scores
    q with it; the learner sees |q - s| > 0; RL reaches step 2."""
    job = write_job(tmp, port, algorithm__mode="static_skills", analyzer__skill_source="self")
    start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp, "job.log_level=debug")
    start("actor", job, "actor-0", tmp)
    st = wait_for("RL step 2", lambda s: s["stage"] == "rl" and s["step"] >= 2, port, 300)
    assert st["mode"] == "static_skills", st["mode"]
    text = open(os.path.join(tmp, "analyzer-0.log"), errors="replace").read()
    assert "static_skills: teacher context from the skills of" in text, text[-2000:]
    scored = [ln for ln in text.splitlines() if "skill source" in ln]
    assert scored and all("skill source SKILL_LIBRARY, q on " in ln for ln in scored), scored[:3]
    assert any(" q on 0 of" not in ln for ln in scored), scored[:3]
    rl = rl_metrics(tmp)
    assert any(x["mean_abs_q_minus_s"] > 0 and x["opd_adv"] > 0 for x in rl), rl[-2:]
    print("static_skills: step %d; %d scored groups with source SKILL_LIBRARY and q; "
          "|q - s| > 0 in training" % (st["step"], len(scored)))


def case_score_reuse(tmp, port):
    """The analyzer scores only what is new (issue 9 item 1): a tap keeps the scored groups.
    Where the analyzer held the version a group was sampled with, every s is exactly the
    actor's sampling log-probs (copied, not recomputed: a recomputation differs in the
    last bits), q is scored with the oracle's skills in both slots and differs from s, the
    learner trains on q - s != 0, and the analyzer's counters (its stop line; the same
    counters go out in its heartbeats) match the steps the tap saw."""
    tap = ScoredTap(port)
    try:
        job = write_job(tmp, port, algorithm__stage0_steps=0)
        start("learner", job, "learner", tmp)
        an = start("analyzer", job, "analyzer-0", tmp, *tap.args())
        start("actor", job, "actor-0", tmp)
        wait_for("2 RL steps", lambda s: s["step"] >= 2 and len(tap.scored) >= 2, port, 300)
        an.send_signal(signal.SIGTERM)
        an.wait(timeout=60)
        wait_for_log(tmp, "analyzer-0", "stopping:", 10)
        time.sleep(0.5)  # the tap forwards what the analyzer sent before it stopped
    finally:
        tap.close()
    same = other = n_tok = 0
    for g in list(tap.scored):
        reuse = g.scored_version == g.group.policy_version
        for an_, ep in zip(g.analyses, g.group.episodes):
            for sc, stp in zip(an_.steps, ep.steps):
                if not stp.response_ids or not stp.prompt_ids:
                    continue
                assert len(sc.s) == len(stp.response_ids), "s on every response token"
                assert len(sc.q) == len(sc.s), "q with the oracle's skill on every step"
                if reuse and len(stp.sample_logprobs) == len(stp.response_ids):
                    assert list(sc.s) == list(stp.sample_logprobs), \
                        "s was recomputed though the analyzer held the sampling version"
                    same += 1
                    n_tok += len(sc.s)
                else:
                    other += 1
    assert same > 0, "no group scored at its sampling version"
    text = open(os.path.join(tmp, "analyzer-0.log"), errors="replace").read()
    line = [x for x in text.splitlines() if "stopping:" in x][-1]
    want = "s from the actor on %d steps, scored on %d;" % (same, other)
    assert want in line, (want, line)
    rl = rl_metrics(tmp)
    assert any(x["mean_abs_q_minus_s"] > 0 for x in rl), rl[-2:]
    print("score_reuse: s taken from the actor on %d steps (%d tokens), scored on %d; "
          "q - s != 0 in training; %s" % (same, n_tok, other, line.split("stopping: ")[-1]))


def case_opd_lost(tmp, port):
    """algorithm.opd_episodes lost: of a group of two won and two lost episodes, the
    analyzer gives the won ones no skill and no q (source SKILL_NONE, s only) and the lost
    ones a skill and q on every response token; the learner trains on the group. The mode
    is static_skills, so every episode would have a skill (the shipped library's), and the
    group is crafted (crafted_group, below), so both outcomes are in it."""
    tap = ScoredTap(port)
    try:
        job = write_job(tmp, port, algorithm__mode="static_skills", algorithm__stage0_steps=0,
                        algorithm__opd_episodes="lost", analyzer__skill_source="self",
                        optim__tokens_per_step=64,  # one crafted group is a step
                        optim__micro_batch_tokens=64, sampling__max_prompt_tokens=48)
        start("learner", job, "learner", tmp)
        start("analyzer", job, "analyzer-0", tmp, *tap.args())
        st = wait_for("RL", lambda s: s["stage"] == "rl", port, 120)
        e = crafted_group(st["version"], actor="crafted")
        for i, ep in enumerate(e.episode_group.episodes):
            ep.won = i < 2
            ep.episode_return = 1.0 if ep.won else 0.0
        push(port, 0, [e])
        deadline = time.time() + 120
        while not tap.scored and time.time() < deadline:
            time.sleep(0.2)
        st = wait_for("the group trained", lambda s: s["step"] >= 1, port, 120)
    finally:
        tap.close()
    assert tap.scored, "the analyzer sent no scored group in 120 s"
    g = tap.scored[0]
    assert [ep.won for ep in g.group.episodes] == [True, True, False, False]
    for i, (an_, ep) in enumerate(zip(g.analyses, g.group.episodes)):
        scores = list(an_.steps)
        assert len(scores) == len(ep.steps) == 1
        assert all(len(sc.s) == len(stp.response_ids) for sc, stp in zip(scores, ep.steps))
        if ep.won:
            assert an_.source == pb.SKILL_NONE and not an_.skill and not an_.step_skills, an_
            assert all(len(sc.q) == 0 for sc in scores), "q on a won episode"
        else:
            assert an_.source == pb.SKILL_LIBRARY and an_.skill, an_
            assert all(len(sc.q) == len(sc.s) for sc in scores), "no q on a lost episode"
    print("opd_lost: won episodes scored without a skill or q, lost ones with the library's "
          "skill and q; RL step %d" % st["step"])


# ---- peers that lie (issue 14 items 4, 6, 7, 8) ------------------------------------------

def envelope(sender):
    return pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender=sender)


def crafted_group(version, actor="poison", n=4):
    """A well-formed EpisodeGroup of this job (sokoban, train, n episodes of one step)."""
    e = envelope(actor)
    g = e.episode_group
    g.env, g.split, g.policy_version, g.actor_id, g.group_id = "sokoban", "train", version, actor, 1
    for i in range(n):
        ep = g.episodes.add()
        ep.episode_return, ep.family, ep.sample_seed = 1.0, "", 100 + i
        st = ep.steps.add()
        st.prompt_ids.extend(range(10, 30))
        st.skill_slot_episode, st.skill_slot_step = 5, 10
        st.response_ids.extend([5, 6, 7])
        st.sample_logprobs.extend([-1.0, -2.0, -0.5])
        st.action, st.reward, st.valid, st.observation = "up", 1.0, True, "a wall"
    return e


def push(port, off, msgs):
    s = CTX.socket(zmq.PUSH)
    s.setsockopt(zmq.LINGER, 60000)  # groups_in reads only when the hub has room
    s.connect("tcp://127.0.0.1:%d" % (port + off))
    for m in msgs:
        s.send(m.SerializeToString() if hasattr(m, "SerializeToString") else m)
    s.close()


def case_poison(tmp, port):
    """Crafted but well-formed messages from a client that can reach the sockets: NaN
    log-probs, a huge reward, an unknown env, a future policy version, a token outside the
    vocabulary, an empty prompt, forged env and family names with quotes and newlines, junk
    q, a heartbeat claiming 2.5e17 episodes in flight, a READY claiming INT_MAX credit, a
    weights request for one bucket 100000 times, a message over the transport's size limit,
    garbage on groups_out. Each is refused and counted under its reason; nothing of it is
    trained on or reaches the status document or metrics.jsonl (still one valid JSON object
    per line); the learner stays up and trains."""
    job = write_job(tmp, port)
    lrn = start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    start("actor", job, "actor-0", tmp)
    st = wait_for("RL step 1", lambda s: s["stage"] == "rl" and s["step"] >= 1, port, 240)
    v, step0 = st["version"], st["step"]
    mal0 = st["counts"]["malformed"]
    forged = 'sokoban","forged":1}\n{"stage":9,"x":"'

    bad = {}
    e = crafted_group(v)
    e.episode_group.episodes[1].steps[0].sample_logprobs[1] = float("nan")
    bad["bad_logprob"] = [e]
    e = crafted_group(v)
    e.episode_group.episodes[0].steps[0].reward = 3e38
    bad["bad_reward"] = [e]
    e = crafted_group(v)
    e.episode_group.env = "household"
    bad["unknown_env"] = [e]
    e = crafted_group(v + 1000)
    bad["future_version"] = [e]
    e = crafted_group(v)
    e.episode_group.episodes[3].steps[0].response_ids[2] = 99999  # the vocabulary has 4096
    bad["bad_token"] = [e]
    e = crafted_group(v)
    st0 = e.episode_group.episodes[2].steps[0]
    del st0.prompt_ids[:]
    st0.skill_slot_episode = st0.skill_slot_step = 0
    bad["empty_prompt"] = [e]
    e1, e2 = crafted_group(v), crafted_group(v)
    e1.episode_group.env = forged
    e2.episode_group.episodes[0].family = 'pick","success/forged":1.0,"y":"\n'
    bad["bad_string"] = [e1, e2]
    push(port, 0, [m for ms in bad.values() for m in ms])

    sc = envelope("poison-analyzer")  # junk q on a group that is otherwise fine
    sc.scored_group.group.CopyFrom(crafted_group(v).episode_group)
    sc.scored_group.scored_version, sc.scored_group.analyzer_id = v, "poison-analyzer"
    for _ in range(4):
        a = sc.scored_group.analyses.add()
        s3 = a.steps.add()
        s3.s.extend([-1.0, -1.0, -1.0])
        s3.q.extend([1e30, -1.0, float("inf")])
    bad["bad_scores"] = [sc]
    push(port, 2, [sc])

    hb = envelope("liar")
    hb.heartbeat.role, hb.heartbeat.id, hb.heartbeat.host = pb.ROLE_ACTOR, "liar", "h"
    hb.heartbeat.episodes_in_flight = 251000000000000000
    bad["bad_telemetry"] = [hb]
    push(port, 4, [hb])

    d = CTX.socket(zmq.DEALER)  # a READY claiming INT_MAX credit, and garbage
    d.setsockopt(zmq.LINGER, 5000)
    d.connect("tcp://127.0.0.1:%d" % (port + 1))
    ready = envelope("greedy-analyzer")
    ready.control.kind, ready.control.count = pb.Control.READY, 2147483647
    bad["bad_credit"] = [ready]
    d.send(ready.SerializeToString())
    d.send(os.urandom(200))
    d.send(b"\xff" * 64)

    def counted(s):
        r = s.get("rejected", {})
        return all(r.get(k, 0) >= len(ms) for k, ms in bad.items()) and \
            s["counts"]["malformed"] >= mal0 + 2
    st = wait_for("every crafted message refused under its reason", counted, port, 120)
    step1 = st["step"]
    assert not d.poll(500), "a READY claiming INT_MAX credit was dealt a group"
    d.close()

    # weights: one request for bucket 0 a hundred thousand times gets it at most once.
    # It names the latest version; when the learner has published a newer one (and let
    # this one go) before the request arrives, it is a stale fetch, answered with an
    # announce: ask again, at most 20 times, until one lands on a version still served.
    capped0 = st["sockets"]["weights"]["fetch_capped"]
    w = CTX.socket(zmq.DEALER)
    w.setsockopt(zmq.LINGER, 0)
    w.connect("tcp://127.0.0.1:%d" % (port + 3))
    for attempt in range(20):
        cur = wait_for("the latest weights version", lambda s: True, port, 30)
        f = envelope("greedy")
        f.weight_fetch.version = cur["weights"]["latest_version"]
        f.weight_fetch.buckets.extend([0] * 100000)
        f.weight_fetch.id = "greedy"
        w.send(f.SerializeToString())
        got = 0
        while w.poll(2000):
            rep = pb.Envelope()
            rep.ParseFromString(w.recv())
            got += rep.WhichOneof("body") == "weight_bucket"
        assert got <= 1, "one request brought %d buckets" % got
        now = wait_for("the weights counters", lambda s: True, port, 30)
        if now["sockets"]["weights"]["fetch_capped"] >= capped0 + 99999:
            break
    else:
        raise AssertionError("20 greedy fetches, none on a version still served")
    w.close()

    # over the transport's own limit (2 x wire.max_msg_bytes): libzmq drops the connection
    d0 = st["sockets"]["telemetry"]["disconnects"]
    big = CTX.socket(zmq.PUSH)
    big.setsockopt(zmq.LINGER, 0)
    big.connect("tcp://127.0.0.1:%d" % (port + 4))
    big.send(b"\x0a" + b"\xff" * (9 << 20))
    st = wait_for("the oversized message's connection counted",
                  lambda s: s["sockets"]["telemetry"]["disconnects"] > d0, port, 60)
    big.close()

    st = wait_for("a step after the crafted messages were refused",
                  lambda s: s["step"] >= max(step1, step0) + 1, port, 240)
    assert lrn.poll() is None, "the learner died:\n" + log_tail(tmp)
    assert "household" not in st["envs"] and all("forged" not in k for k in st["envs"]), \
        st["envs"].keys()
    ids = [p["id"] for p in st["peers"]]
    assert "liar" not in ids and "poison" not in ids, ids
    assert st["counts"]["episodes_lost"] < 1000, st["counts"]
    assert all(p["in_flight"] < 1000 for p in st["peers"]), st["peers"]
    assert st["queues"]["analyzer_credit"] <= 2 * len(peers(st, "analyzer")) + 2, st["queues"]
    for k in ("groups_in", "scored_in", "telemetry", "status", "groups_out"):
        assert "disconnects" in st["sockets"][k], k
    assert st["sockets"]["weights"]["fetch_capped"] >= 99999, st["sockets"]["weights"]
    lines = open(os.path.join(tmp, "run", "metrics.jsonl")).read().splitlines()
    for ln in lines:
        rec = json.loads(ln)  # one object per line, nothing appended after it
        assert isinstance(rec, dict) and all("forged" not in k for k in rec), ln
        assert rec["stage"] in (0, 1, 2), ln
    log = open(os.path.join(tmp, "learner.log"), errors="replace").read()
    refused = [x for x in log.splitlines() if "refused a" in x]
    assert len(refused) <= 12, refused  # one line per sender and reason, not per message
    print("poison: refused %s; %d bucket for a 100000-bucket request; the oversized message "
          "counted as a disconnect; %d metrics lines all valid; training went on to step %d" % (
              json.dumps(st["rejected"]), got, len(lines), st["step"]))


def heartbeat(sender, role, incarnation, in_flight):
    e = envelope(sender)
    h = e.heartbeat
    h.role, h.id, h.host, h.incarnation, h.episodes_in_flight = role, sender, "h", incarnation, \
        in_flight
    return e


def case_lost_work(tmp, port):
    """Lost work shows and survives a learner restart: a peer that comes back under the
    same id as a new incarnation within peer_timeout has its predecessor's in-flight
    episodes counted lost (peer_restarted), also for a real actor killed with -9 and
    restarted at once; a group dealt to an analyzer that dies is counted lost
    (peer_timeout) from the learner's own ledger; the counters, and the rejections by
    reason, are in the checkpoint and come back after a restart; a checkpoint written
    before counters were kept still resumes (counters from 0)."""
    job = write_job(tmp, port)
    lrn = start("learner", job, "learner", tmp)
    ana = start("analyzer", job, "analyzer-0", tmp)
    act = start("actor", job, "actor-a", tmp)
    st = wait_for("RL step 1", lambda s: s["stage"] == "rl" and s["step"] >= 1, port, 240)

    # a peer restarted under the same id: its old incarnation's 3 episodes are lost
    push(port, 4, [heartbeat("twin", pb.ROLE_ACTOR, 0x1111, 3)])
    wait_for("twin", lambda s: any(p["id"] == "twin" for p in s["peers"]), port, 30)
    push(port, 4, [heartbeat("twin", pb.ROLE_ACTOR, 0x2222, 0)])
    st = wait_for("twin's restart counted", lambda s: s["episodes_lost_by_reason"].get(
        "peer_restarted", 0) >= 3, port, 30)
    twin = [p for p in st["peers"] if p["id"] == "twin"][0]
    assert twin["incarnation"] == "%016x" % 0x2222 and twin["in_flight"] == 0, twin

    # the real actor, killed and restarted at once under the same id
    inc0 = [p for p in st["peers"] if p["id"] == "actor-a"][0]["incarnation"]
    lost0 = st["counts"]["peers_lost"]
    act.kill()
    act.wait()
    act = start("actor", job, "actor-a", tmp)
    st = wait_for("actor-a's new incarnation", lambda s: any(
        p["id"] == "actor-a" and p["incarnation"] != inc0 for p in s["peers"]), port, 120)
    assert st["counts"]["peers_lost"] >= lost0 + 1, st["counts"]

    # an analyzer that takes a group and dies: the group is counted lost when it expires
    push(port, 4, [heartbeat("doomed-analyzer", pb.ROLE_ANALYZER, 0x3333, 0)])
    d = CTX.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.connect("tcp://127.0.0.1:%d" % (port + 1))
    ready = envelope("doomed-analyzer")
    ready.control.kind, ready.control.count = pb.Control.READY, 1
    t0 = time.time()
    while not d.poll(1000):
        assert time.time() - t0 < 240, "no group dealt to doomed-analyzer in 240 s"
        d.send(ready.SerializeToString())  # re-ask, as an analyzer does when idle
    g = pb.Envelope()
    g.ParseFromString(d.recv())
    n = len(g.episode_group.episodes)
    d.close()
    st = wait_for("doomed-analyzer's outstanding group", lambda s: any(
        p["id"] == "doomed-analyzer" and p["outstanding"] >= n for p in s["peers"]), port, 30)
    before = st["episodes_lost_by_reason"].get("peer_timeout", 0)
    st = wait_for("doomed-analyzer forgotten and its group lost", lambda s: s[
        "episodes_lost_by_reason"].get("peer_timeout", 0) >= before + n, port, 60)

    # something rejected, so the restart has a reason table to keep
    push(port, 4, [heartbeat("liar", pb.ROLE_ACTOR, 5, 251000000000000000)])
    st = wait_for("the liar refused", lambda s: s["rejected"].get("bad_telemetry", 0) >= 1,
                  port, 30)

    # the learner stops (final checkpoint) and comes back with the counters; the roles go
    # first, so no new work piles up while the trainer finishes its step
    for p in (act, ana):
        p.kill()
        p.wait()
    lrn.send_signal(signal.SIGTERM)
    lrn.wait(timeout=400)
    final = st
    ck = os.path.join(tmp, "run", "ckpt")
    path = os.path.join(ck, open(os.path.join(ck, "latest")).read().strip())
    state = json.load(open(os.path.join(path, "trainer_state.json")))
    kept = state["counters"]
    assert kept["episodes_lost"] >= final["counts"]["episodes_lost"] and \
        kept["rejected.bad_telemetry"] >= 1 and kept["lost.peer_restarted"] >= 3, kept
    lrn = start("learner", job, "learner", tmp)
    # the restarted trainer requeues the checkpoint's pending groups and may train some of
    # them before the first status answer: its step is the checkpoint's or later; and after
    # 3 peer timeouts the groups the dead analyzer held are counted lost (learner_restart)
    st = wait_for("the restarted learner", lambda s: s["step"] >= state["step"], port, 120)
    restart_lost = st["episodes_lost_by_reason"].get("learner_restart", 0) - \
        kept.get("lost.learner_restart", 0)
    assert restart_lost in (0, kept.get("dealt_outstanding", 0)), (restart_lost, kept)
    assert st["counts"]["episodes_lost"] == kept["episodes_lost"] + restart_lost, \
        (st["counts"], kept)
    assert st["counts"]["peers_lost"] >= kept["peers_lost"], (st["counts"], kept)
    assert st["rejected"].get("bad_telemetry", 0) >= 1, st["rejected"]
    assert st["episodes_lost_by_reason"].get("peer_restarted", 0) >= 3, st
    assert st["counts"]["groups_trained"] >= final["counts"]["groups_trained"], st["counts"]

    # a checkpoint from before counters were kept still resumes, counting from 0
    lrn.kill()
    lrn.wait()
    path = os.path.join(ck, open(os.path.join(ck, "latest")).read().strip())
    sp = os.path.join(path, "trainer_state.json")
    state = json.load(open(sp))
    del state["counters"]
    with open(sp, "w") as f:
        json.dump(state, f, indent=2)
    start("learner", job, "learner", tmp)
    st = wait_for("the learner resumed from an old-style checkpoint",
                  lambda s: s["step"] >= state["step"], port, 120)
    assert st["counts"]["episodes_lost"] == 0 and st["rejected"] == {}, st["counts"]
    print("lost_work: restart under the same id counted (%d episodes), a killed analyzer's "
          "group counted (%d), counters kept across a learner restart: %s" % (
              final["episodes_lost_by_reason"].get("peer_restarted", 0), n,
              json.dumps(final["episodes_lost_by_reason"])))



# ---- demand-driven actors (issue 9 items 2-3) --------------------------------------------

class SlowAnalyzerTap:
    """Sits between the learner and one analyzer on groups-out and holds each of the
    analyzer's READYs for `delay` seconds before passing it on: an analyzer that scores
    a group only every `delay` seconds, whatever the machine."""

    def __init__(self, port, delay):
        import threading
        self.router = CTX.socket(zmq.ROUTER)
        self.port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.dealer = CTX.socket(zmq.DEALER)
        self.dealer.connect("tcp://127.0.0.1:%d" % (port + 1))
        for s in (self.router, self.dealer):
            s.setsockopt(zmq.LINGER, 0)
        self.delay, self.analyzer, self.held = delay, None, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def args(self):
        return ["endpoints.groups_out=tcp://127.0.0.1:%d" % self.port]

    def run(self):
        poller = zmq.Poller()
        for s in (self.router, self.dealer):
            poller.register(s, zmq.POLLIN)
        while not self.stop.is_set():
            for s, _ in poller.poll(50):
                if s is self.router:
                    self.analyzer, msg = self.router.recv_multipart()
                    self.held.append((time.time() + self.delay, msg))
                elif s is self.dealer and self.analyzer is not None:
                    self.router.send_multipart([self.analyzer, self.dealer.recv()])
            while self.held and self.held[0][0] <= time.time():
                self.dealer.send(self.held.pop(0)[1])

    def close(self):
        self.stop.set()
        self.thread.join(10)
        for s in (self.router, self.dealer):
            s.close()


def watch_credit(port, steps, timeout, G):
    """Sample the status until `steps` RL steps: the largest backlog seen anywhere (groups
    the actors say they play, hub, analyzers' ledger, train queue) against the credit
    budget, and the last status."""
    worst, seen = [], []
    t0 = time.time()
    while True:
        assert time.time() - t0 < timeout, "no step %d within %d s; last %s" % (
            steps, timeout, json.dumps(seen[-1] if seen else None)[:3000])
        st = status(port)
        if st is None:
            time.sleep(0.3)
            continue
        seen.append(st)
        q = st["queues"]
        playing = sum(p["in_flight"] for p in peers(st, "actor")) // G
        at_analyzers = sum(p.get("outstanding", 0) for p in peers(st, "analyzer")) // G
        backlog = playing + q["hub_backlog"] + at_analyzers + q["train_groups"]
        worst.append((backlog, q["credit_budget"], q["outstanding"], st["step"]))
        if st["stage"] == "rl" and st["step"] >= steps:
            return st, worst
        time.sleep(0.3)


def check_credit_bounds(st, worst, G, n_actors, S):
    """What every credit case checks: the backlog never exceeded the largest budget seen
    by more than what heartbeats lag by (one group per actor: a heartbeat may still show
    a group that is already in the hub); nothing is produced but against credit; stale
    drops within the stated bound (5% of the episodes, one group of slack)."""
    c, q = st["counts"], st["queues"]
    budget_max = max(b for _, b, _, _ in worst)
    backlog_max = max(x for x, _, _, _ in worst)
    assert backlog_max <= budget_max + n_actors, ("backlog past the budget", worst)
    assert q["outstanding_max"] <= budget_max + n_actors, (q, budget_max)
    assert budget_max <= (S + 1) * max(1, q["groups_per_version"]) + 4 * n_actors + 8, \
        ("the budget is not sized by the consumption rate", q, budget_max)
    # Every group an actor sent came from credit (one group per actor may have been
    # started under the learner's budget before the last status, and the test's own
    # groups do not count: none here).
    assert c["groups_received"] <= c["credit_granted"], c
    lost_groups = (c["dropped_stale"] + c["episodes_lost"]) // G
    in_pipeline = c["groups_received"] - c["groups_trained"] - lost_groups
    assert in_pipeline <= budget_max + n_actors, ("groups piled up", c, budget_max)
    episodes = c["groups_received"] * G
    assert c["dropped_stale"] <= 0.05 * episodes + G, ("stale drops past the bound", c)


def case_credit_slow_analyzer(tmp, port):
    """Actors deliberately faster than the analyzer (three actors; the analyzer's READYs
    held 1.5 s each by a tap on groups-out), max_staleness 1: actors start groups only
    against the learner's rollout credit, so the backlog stays within (max_staleness + 1)
    steps' worth of groups, every group sent was granted, and stale drops stay within
    the bound; the old flood (actors playing on while the analyzer falls behind) shows
    as groups received far past groups trained."""
    G = 4
    tap = SlowAnalyzerTap(port, 1.5)
    try:
        job = write_job(tmp, port, algorithm__max_staleness=1, checkpoint__every=1000)
        start("learner", job, "learner", tmp)
        start("analyzer", job, "analyzer-0", tmp, *tap.args())
        for i in range(3):
            start("actor", job, "actor-%d" % i, tmp)
        st, worst = watch_credit(port, 6, 420, G)
        check_credit_bounds(st, worst, G, 3, 1)
        c = st["counts"]
        print("credit_slow_analyzer: %d steps; %d groups received, %d trained, %d granted; "
              "backlog at most %d groups (budget at most %d); %d of %d episodes stale" % (
                  st["step"], c["groups_received"], c["groups_trained"], c["credit_granted"],
                  max(x for x, _, _, _ in worst), max(b for _, b, _, _ in worst),
                  c["dropped_stale"], c["groups_received"] * G))
    finally:
        tap.close()


def case_credit_fast_analyzer(tmp, port):
    """The analyzer faster than the learner (oracle skills; a checkpoint after every step
    and four groups a step keep the learner the slow role), max_staleness 1: while the
    learner trains a step and checkpoints, the next step's groups are generated and
    scored, so steps follow back to back (status learner.steps_ready counts steps whose
    batch was queued when the step before ended), within the same bounds. The step is
    sized by optim.groups_per_step: every step trains exactly four groups (metrics.jsonl
    "groups"), whatever their tokens, and the credit budget lets four fill (no deadlock)."""
    G = 4
    job = write_job(tmp, port, algorithm__max_staleness=1, optim__groups_per_step=4)
    start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    for i in range(2):
        start("actor", job, "actor-%d" % i, tmp)
    st, worst = watch_credit(port, 6, 420, G)
    check_credit_bounds(st, worst, G, 2, 1)
    ready = st["learner"]["steps_ready"]
    assert ready >= 1, ("the learner waited for data before every step", st["learner"])
    assert st["queues"]["groups_per_step"] == 4, st["queues"]
    rl = rl_metrics(tmp)
    assert len(rl) >= 5 and all(x["groups"] == 4 and x["samples"] > 0 for x in rl), \
        [(x["step"], x["groups"], x["samples"]) for x in rl]
    print("credit_fast_analyzer: %d steps of 4 groups, %d of them back to back; wait "
          "fraction %.2f; %d of %d episodes stale" % (
              st["step"], ready, st["learner"]["wait_fraction"],
              st["counts"]["dropped_stale"], st["counts"]["groups_received"] * G))


def case_credit_restart(tmp, port):
    """Credit survives restarts without a deadlock: an actor killed with -9 holding credit
    (the learner returns it when the new incarnation asks, or when the peer is forgotten),
    and the learner killed and restarted from its checkpoint (its credit table is gone;
    actors ask again every 2 s): training goes on after each."""
    G = 4
    job = write_job(tmp, port, algorithm__max_staleness=1)
    lrn = start("learner", job, "learner", tmp)
    start("analyzer", job, "analyzer-0", tmp)
    a = start("actor", job, "actor-a", tmp)
    start("actor", job, "actor-b", tmp)
    st, _ = watch_credit(port, 2, 300, G)
    a.kill()
    a.wait()
    start("actor", job, "actor-a", tmp)
    step = st["step"]
    st, worst = watch_credit(port, step + 2, 300, G)
    assert any(p["id"] == "actor-a" and p["groups_trained"] >= 1 for p in st["peers"]) or \
        st["step"] >= step + 2, st["peers"]
    lrn.kill()
    lrn.wait()
    start("learner", job, "learner", tmp, "checkpoint.resume=true")
    st = wait_for("the restarted learner", lambda s: s["stage"] == "rl", port, 120)
    step = st["step"]
    st, worst = watch_credit(port, step + 2, 300, G)
    assert st["counts"]["credit_granted"] >= 1, st["counts"]
    print("credit_restart: training went on after an actor and the learner restarted "
          "(step %d, %d credit granted since the restart)" % (
              st["step"], st["counts"]["credit_granted"]))


def case_env_budget(tmp, port):
    """job.max_env_steps ends RL at an env-step budget (the experiment's equal budgets):
    credit stops at the budget and every group it paid for is trained before the learner
    stops (none is left at an analyzer or in a queue, as when the learner stopped at the
    first group past the budget); the run ends within a few groups of the budget, the
    learner says so in its log and exits 0 long before job.total_steps, and seedctl
    launch ends with it."""
    budget, G, max_steps = 300, 4, 2
    job = write_job(tmp, port, job__max_env_steps=budget)
    log = open(os.path.join(tmp, "seedctl.log"), "wb")
    ctl = subprocess.Popen([os.path.join(BIN, "seedctl"), "launch", job, "--quiet"],
                           stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(ctl)
    try:
        ctl.wait(timeout=300)
    except subprocess.TimeoutExpired:
        raise AssertionError("the job did not end at its env-step budget in 300 s:\n" +
                             log_tail(tmp))
    assert ctl.returncode == 0, "seedctl exited %s:\n%s" % (ctl.returncode, log_tail(tmp))
    run = os.path.join(tmp, "run")
    rl = [x for x in map(json.loads, open(os.path.join(run, "metrics.jsonl")))
          if x["stage"] == 2 and "loss" in x]
    assert 3 <= len(rl) == rl[-1]["step"] < 1000, rl[-2:]
    seen_steps, seen_eps = rl[-1]["env_steps_seen"], rl[-1]["episodes_seen"]
    trained = G * sum(x["groups"] for x in rl)
    assert trained == seen_eps, \
        "episodes received %d, trained %d: a budgeted run left groups untrained (%s)" % (
            seen_eps, trained, [(x["step"], x["groups"], x["episodes_seen"]) for x in rl])
    # a group is at most G * max_steps env steps; credit the projection allowed past the
    # budget is a few groups at most (actors hold one group each here)
    assert budget <= seen_steps <= budget + 4 * G * max_steps, (seen_steps, budget)
    text = open(os.path.join(run, "logs", "learner.log"), errors="replace").read()
    want = "reached max_env_steps %d at step %d" % (budget, len(rl))
    assert want in text, (want, text[-2000:])
    print("env_budget: stopped at step %d with %d env steps seen (budget %d), all %d "
          "episodes received trained" % (len(rl), seen_steps, budget, trained))


def case_launch_threads(tmp, port):
    """seedctl launch with model.threads 0 gives each role OpenMP threads from its measured
    demand (docs/DESIGN.md "Local launches"): the banner states the split and the demand
    it follows; every role process runs with that model.threads; the split is the rule's
    (cores in proportion to demand, a role's share divided among its processes, the
    learner's rounded up, the others' to the nearest, 1..cores each)."""
    import math
    import re
    job = write_job(tmp, port, model__threads=0, roles__actors=3, roles__analyzers=1)
    log_path = os.path.join(tmp, "seedctl.log")
    ctl = subprocess.Popen([os.path.join(BIN, "seedctl"), "launch", job, "--quiet"],
                           stdout=open(log_path, "wb"), stderr=subprocess.STDOUT)
    PROCS.append(ctl)
    wait_for("every role up", lambda s: len(peers(s, "actor")) == 3 and
             len(peers(s, "analyzer")) == 1, port, 240)
    text = open(log_path, errors="replace").read()
    m = re.search(r"threads +learner (\d+), actor (\d+), analyzer (\d+) on (\d+) cores \(demand "
                  r"per trained token: learner ([\d.]+), actors ([\d.]+), analyzers ([\d.]+)\)",
                  text)
    assert m, "no thread split in the banner:\n" + text[:2000]
    split = {"learner": int(m.group(1)), "actor": int(m.group(2)),
             "analyzer": int(m.group(3))}
    cores = int(m.group(4))
    assert cores == len(os.sched_getaffinity(ctl.pid)), (cores, os.sched_getaffinity(ctl.pid))
    d = {"learner": float(m.group(5)), "actor": float(m.group(6)),
         "analyzer": float(m.group(7))}
    n = {"learner": 1, "actor": 3, "analyzer": 1}
    for role in split:
        share = d[role] / sum(d.values()) * cores / n[role]
        want = math.ceil(share) if role == "learner" else int(math.floor(share + 0.5))
        assert split[role] == max(1, min(want, cores)), (role, split, d, cores)
    seen = {}
    for t in os.listdir("/proc/%d/task" % ctl.pid):
        for k in open("/proc/%d/task/%s/children" % (ctl.pid, t)).read().split():
            argv = open("/proc/%s/cmdline" % k, "rb").read().decode().split("\0")
            role = os.path.basename(argv[0])[len("seed-"):]
            got = [a.split("=", 1)[1] for a in argv if a.startswith("model.threads=")]
            seen.setdefault(role, []).append(int(got[-1]) if got else None)
    assert sorted(seen) == ["actor", "analyzer", "learner"] and len(seen["actor"]) == 3, seen
    for role, vals in seen.items():
        assert all(v == split[role] for v in vals), (role, vals, split)
    print("launch_threads: on %d cores learner %d, actors %d, analyzer %d threads (demand %s)"
          % (cores, split["learner"], split["actor"], split["analyzer"], d))

def main():
    tmp = tempfile.mkdtemp(prefix="seed-loop-")
    port = free_base_port()
    make_model(os.path.join(tmp, "model"))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    ok = False
    try:
        globals()["case_" + CASE](tmp, port)
        ok = True
    except AssertionError:
        print(log_tail(tmp), file=sys.stderr)
        raise
    finally:
        stop_all()
        CTX.destroy(linger=0)  # a socket left open by a failed check must not hang us
        if ok and not os.environ.get("SEED_KEEP_LOGS"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("logs kept in", tmp, file=sys.stderr)


main()
