"""What the cluster tests share (tests/netns, tests/cluster_slurm, tests/security): a tiny
random Qwen2 model, job files (JSON is YAML; written 0600 since they hold CURVE secrets),
key pairs made by `seedctl keygen`, and an independent status client (pyzmq + Google's
protobuf runtime) that can speak CURVE. Every wait is bounded."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import zmq

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "deploy", "envserver"))
import seedwire  # noqa: E402

pb = seedwire.load_pb2(os.environ.get("SEED_PB2_DIR"))
TOKENIZER = os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json")
CTX = zmq.Context()


def make_model(d):
    """The tiny random model tests/loop uses: the shipped tokenizer, 2 layers of width 64."""
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 4096,
           "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": True, "hidden_act": "silu", "eos_token_id": 2,
           "torch_dtype": "float32"}
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    shutil.copy(TOKENIZER, os.path.join(d, "tokenizer.json"))


def base_job(tmp, name, port, host="127.0.0.1", **over):
    """A short job on the tiny model: one warm-start step, then RL; over: {"sec__key": v}."""
    job = {
        "job": {"name": name, "run_dir": os.path.join(tmp, "run"), "total_steps": 1000},
        "model": {"path": os.path.join(tmp, "model"), "init": "random", "threads": 1},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 2,
                  "options": {"room_size": "6", "boxes": "1"}}],
        # max_staleness 0: a step takes only groups of the newest weights, so steps stay
        # small on a busy machine (every step would otherwise take the whole backlog)
        "algorithm": {"mode": "seed", "group_size": 4, "stage0_steps": 1, "stage1_steps": 0,
                      "max_staleness": 0},
        "eval": {"every": 0},
        "optim": {"groups_per_step": 0, "tokens_per_step": 1024, "micro_batch_tokens": 1024, "lr": 1e-4},
        "sampling": {"max_new_tokens": 8},
        "actor": {"episodes_in_flight": 4, "groups_in_flight": 1},
        "analyzer": {"skill_source": "oracle", "batch_tokens": 4096},
        "endpoints": {"host": host, "base_port": port},
        "checkpoint": {"every": 1, "keep": 2},
        "wire": {"peer_timeout_ms": 4000, "max_msg_bytes": 4 << 20},
        "roles": {"actors": 1, "analyzers": 1, "stop_timeout_s": 60},
    }
    for key, value in over.items():
        sec, name_ = key.split("__")
        job[sec][name_] = value
    return job


def write_job(path, job):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(job, f, indent=1)
    return path


def keygen(seedctl, prefix):
    """(public, secret) written by `seedctl keygen prefix`."""
    r = subprocess.run([seedctl, "keygen", prefix], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    pub = open(prefix + ".pub").read().strip()
    sec = open(prefix + ".key").read().strip()
    return pub, sec


def curve_client(sock, server_pub, pair):
    sock.setsockopt(zmq.CURVE_SERVERKEY, server_pub.encode())
    sock.setsockopt(zmq.CURVE_PUBLICKEY, pair[0].encode())
    sock.setsockopt(zmq.CURVE_SECRETKEY, pair[1].encode())


def status(endpoint, server_pub=None, pair=None, timeout_ms=3000):
    """One StatusRequest -> the parsed JSON, or None when nothing answers in time."""
    s = CTX.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    if server_pub:
        curve_client(s, server_pub, pair)
    s.connect(endpoint)
    env = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="test-client")
    env.status_request.what = ""
    try:
        s.send(env.SerializeToString(), zmq.NOBLOCK)
    except zmq.Again:
        s.close()
        return None
    try:
        if not s.poll(timeout_ms):
            return None
        rep = pb.Envelope()
        rep.ParseFromString(s.recv())
        return json.loads(rep.status_reply.json)
    finally:
        s.close()


def weights_probe(endpoint, server_pub=None, pair=None, timeout_ms=3000):
    """Ask the weights socket for its newest version as a receiver does; the announce's
    version, or None when nothing came back."""
    s = CTX.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    if server_pub:
        curve_client(s, server_pub, pair)
    s.connect(endpoint)
    env = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="probe")
    env.weight_fetch.version = 0
    env.weight_fetch.id = "probe"
    try:
        t0 = time.time()
        while (time.time() - t0) * 1000 < timeout_ms:
            try:
                s.send(env.SerializeToString(), zmq.NOBLOCK)
            except zmq.Again:
                pass
            if s.poll(500):
                rep = pb.Envelope()
                rep.ParseFromString(s.recv())
                if rep.WhichOneof("body") == "weight_announce":
                    return rep.weight_announce.version
        return None
    finally:
        s.close()


def wait_for(what, pred, get, timeout, every=0.5):
    """Poll get() until pred(value) holds; the value, or AssertionError after timeout."""
    t0 = time.time()
    last = None
    while time.time() - t0 < timeout:
        v = get()
        if v is not None:
            last = v
            if pred(v):
                print("  %.1f s: %s" % (time.time() - t0, what), flush=True)
                return v
        time.sleep(every)
    raise AssertionError("timed out after %d s waiting for %s; last: %s" %
                         (timeout, what, json.dumps(last)[:2000] if last else None))


def peers(st, role):
    return [p for p in st.get("peers", []) if p["role"] == role]


def cleanup_on_sigterm():
    """ctest's timeout sends SIGTERM: unwind, so every finally clause cleans up."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def log_tail(d, n=25):
    out = []
    for root, _, files in os.walk(d):
        for name in sorted(files):
            if name.endswith(".log"):
                with open(os.path.join(root, name), errors="replace") as f:
                    out.append("== %s\n%s" % (name, "".join(f.readlines()[-n:])))
    return "\n".join(out)
