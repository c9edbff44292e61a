"""Episode groups lost in transit on groups_in are counted (issue 14 item 6): a real
seed-learner on loopback and an independent client (pyzmq + Google's protobuf runtime)
speaking the wire protocol as an actor does: numbered groups (EpisodeGroup.incarnation,
seq) and heartbeats with groups_sent.

usage: test_transit.py hole|restart BIN_DIR REPO

hole     seq 1 and 3 arrive, a heartbeat says 3 were sent: once the grace (the job's
         peer_timeout of reading groups_in) has passed, 1 group (G episodes) is lost with
         reason `transit`; seq 2 arriving after that is refused as `late` and not counted
         again; a numbered group the validator refuses is received (episodes_refused), not
         lost in transit.
restart  a heartbeat claiming 3 sent reaches a new run's learner before groups seq 1..3:
         they are received all the same (not late); the learner
         checkpoints seq 1..3 (a clean stop), resumes, receives seq 4, is killed
         with SIGKILL before checkpointing it, resumes from the checkpoint (which does not
         know seq 4): seq 4 is counted lost in transit (the journal says the dead learner
         had it), seq 5 is received, seq 4 sent again is late, and the counters close.
Every wait is bounded; nothing asserts on speed.
"""
import json
import os
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

sys.path.insert(0, os.path.join(REPO, "tests"))
import looptools  # noqa: E402

pb = seedwire.load_pb2(os.environ.get("SEED_PB2_DIR"))
TOKENIZER = os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json")
G = 4
INC = 0x5eed0000000000a1
CTX = zmq.Context()
PROCS = []


def free_base_port():
    return looptools.free_base_port(hash(CASE))


def write_job(tmp, port):
    d = os.path.join(tmp, "model")
    looptools.make_tiny_model(d, TOKENIZER)
    job = {
        "job": {"name": "transit-" + CASE, "run_dir": os.path.join(tmp, "run"),
                "total_steps": 1000},
        "model": {"path": d, "init": "random", "threads": 1},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 2,
                  "options": {"room_size": "6", "boxes": "1"}}],
        "algorithm": {"mode": "seed", "group_size": G, "stage0_steps": 1, "stage1_steps": 0},
        "optim": {"groups_per_step": 0, "tokens_per_step": 1024, "micro_batch_tokens": 1024, "lr": 1e-4},
        "endpoints": {"host": "127.0.0.1", "base_port": port},
        # no analyzer drains the hub here: room for every group this test sends, so the
        # learner keeps reading groups_in (the acks' grace runs only while it does)
        "wire": {"peer_timeout_ms": 3000, "hub_queue": 64},
        "eval": {"every": 0},
    }
    path = os.path.join(tmp, "job.yaml")
    with open(path, "w") as f:
        json.dump(job, f, indent=1)  # JSON is YAML
    return path


def start_learner(job, tmp):
    log = open(os.path.join(tmp, "learner.log"), "ab")
    p = subprocess.Popen([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"],
                         stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def status(port, timeout_ms=3000):
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


def group(seq, logprob=-1.0):
    """A well-formed group of this job from actor `fake-actor`, numbered seq."""
    e = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="fake-actor")
    g = e.episode_group
    g.env, g.split, g.policy_version, g.actor_id = "sokoban", "train", 0, "fake-actor"
    g.group_id, g.incarnation, g.seq = 100 + seq, INC, seq
    for i in range(G):
        ep = g.episodes.add()
        ep.episode_return, ep.sample_seed = 1.0, 100 + i
        st = ep.steps.add()
        st.prompt_ids.extend(range(10, 30))
        st.skill_slot_episode, st.skill_slot_step = 5, 10
        st.response_ids.extend([5, 6, 7])
        st.sample_logprobs.extend([logprob, -2.0, -0.5])
        st.action, st.reward, st.valid, st.observation = "up", 1.0, True, "a wall"
    return e


def heartbeat(sent):
    e = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="fake-actor")
    h = e.heartbeat
    h.role, h.id, h.host, h.incarnation, h.groups_sent = pb.ROLE_ACTOR, "fake-actor", "h", \
        INC, sent
    return e


def push(port, off, msgs):
    s = CTX.socket(zmq.PUSH)
    s.setsockopt(zmq.LINGER, 10000)
    s.connect("tcp://127.0.0.1:%d" % (port + off))
    for m in msgs:
        s.send(m.SerializeToString())
    s.close()


def transit(st):
    return st["episodes_lost_by_reason"].get("transit", 0)


def case_hole(tmp, port):
    job = write_job(tmp, port)
    start_learner(job, tmp)
    wait_for("the learner", lambda s: True, port, 240)
    push(port, 0, [group(1), group(3)])
    push(port, 4, [heartbeat(3)])
    st = wait_for("seq 2 counted lost in transit", lambda s: transit(s) == G, port, 60)
    assert st["counts"]["groups_received"] == 2 and st["queues"]["acks_pending"] == 0, st
    assert st["counts"]["episodes_lost_received"] == 0, st["counts"]
    # seq 2 after all: late, refused, not counted twice
    push(port, 0, [group(2)])
    st = wait_for("seq 2 refused as late", lambda s: s["rejected"].get("late", 0) == 1, port, 30)
    assert st["counts"]["groups_received"] == 2 and transit(st) == G, st
    # a numbered group the validator refuses is received, not lost in transit
    push(port, 0, [group(4, logprob=float("nan"))])
    push(port, 4, [heartbeat(4)])
    st = wait_for("seq 4 refused by the validator",
                  lambda s: s["rejected"].get("bad_logprob", 0) == 1, port, 30)
    assert st["counts"]["episodes_refused"] == G, st["counts"]
    # a later group that arrives shows the learner read past the grace of seq 4's claim
    push(port, 4, [heartbeat(5)])
    st = wait_for("seq 5 counted lost (the grace passed since seq 4's claim)",
                  lambda s: transit(s) == 2 * G, port, 60)
    assert st["counts"]["episodes_refused"] == G and st["queues"]["acks_pending"] == 0, st
    print("hole: a hole and a claim above what arrived counted lost in transit (%d episodes), "
          "a late group refused, a refused group not lost" % transit(st))


def case_restart(tmp, port):
    job = write_job(tmp, port)
    lrn = start_learner(job, tmp)
    wait_for("the learner", lambda s: True, port, 240)
    # the heartbeat first, as from an actor that started before this run's learner: the
    # learner cannot tell yet which of the 3 were its own; the groups in flight behind
    # the claim are received, not refused as late
    push(port, 4, [heartbeat(3)])
    wait_for("the claim of 3 heard, nothing pending before a group",
             lambda s: s["queues"]["acks_open"] == 1 and s["queues"]["acks_pending"] == 0,
             port, 60)
    push(port, 0, [group(1), group(2), group(3)])
    # past the warm start, whose end checkpoints: the checkpoint below is the stop's
    wait_for("seq 1..3 received, in stage 2",
             lambda s: s["counts"]["groups_received"] == 3 and s["stage"] == "rl", port, 240)
    lrn.send_signal(signal.SIGTERM)  # a clean stop: the final checkpoint holds seq 1..3
    assert lrn.wait(timeout=300) == 0
    job_resume = ["checkpoint.resume=true"]
    lrn = subprocess.Popen([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"] +
                           job_resume, stdout=open(os.path.join(tmp, "learner.log"), "ab"),
                           stderr=subprocess.STDOUT)
    PROCS.append(lrn)
    st = wait_for("resumed with seq 1..3", lambda s: s["counts"]["groups_received"] == 3, port,
                  240)
    assert transit(st) == 0, st
    push(port, 0, [group(4)])
    wait_for("seq 4 received", lambda s: s["counts"]["groups_received"] == 4, port, 60)
    lrn.kill()  # SIGKILL: seq 4 came after the last checkpoint
    lrn.wait()
    lrn = subprocess.Popen([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"] +
                           job_resume, stdout=open(os.path.join(tmp, "learner.log"), "ab"),
                           stderr=subprocess.STDOUT)
    PROCS.append(lrn)
    st = wait_for("resumed from the checkpoint", lambda s: True, port, 240)
    assert st["counts"]["groups_received"] == 3, st["counts"]
    push(port, 0, [group(5)])
    push(port, 4, [heartbeat(5)])
    st = wait_for("seq 5 received, seq 4 lost in transit",
                  lambda s: s["counts"]["groups_received"] == 4 and transit(s) == G, port, 60)
    push(port, 0, [group(4)])
    st = wait_for("seq 4 sent again refused as late",
                  lambda s: s["rejected"].get("late", 0) == 1, port, 30)
    c, q = st["counts"], st["queues"]
    # 5 groups sent = 4 received (queued in the hub: no analyzer) + 1 lost in transit
    assert c["groups_received"] == 4 and transit(st) == G and q["acks_pending"] == 0, st
    assert G * 5 == G * c["groups_received"] + transit(st) + c["episodes_refused"], c
    print("restart: a group received after the last checkpoint by a learner killed with "
          "SIGKILL counted lost in transit after the resume (%d episodes)" % transit(st))


def main():
    tmp = tempfile.mkdtemp(prefix="seed-transit-")
    port = free_base_port()
    ok = False
    try:
        globals()["case_" + CASE](tmp, port)
        ok = True
    except AssertionError:
        try:
            print(open(os.path.join(tmp, "learner.log"), errors="replace").read()[-4000:],
                  file=sys.stderr)
        except OSError:
            pass
        raise
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in PROCS:
            try:
                p.wait(timeout=90)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        CTX.destroy(linger=0)
        if ok and not os.environ.get("SEED_KEEP_LOGS"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("logs kept in", tmp, file=sys.stderr)


main()
