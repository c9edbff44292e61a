"""What the process-level tests (tests/loop, tests/soak, tests/learning) share: a free
port range on loopback, the tiny random Qwen2 config they train, and one status request.

Import with sys.path.insert(0, os.path.join(REPO, "tests")); `import looptools`.
"""
import json
import os
import random
import shutil
import socket

import zmq


def free_base_port(salt=0):
    """A base port whose six ports (groups_in .. status) are all free on 127.0.0.1, drawn
    from a stream seeded by the pid and salt so tests started side by side differ."""
    rng = random.Random(os.getpid() * 7919 + salt)
    for _ in range(200):
        base = rng.randrange(20000, 60000, 8)
        socks = []
        try:
            for i in range(6):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", base + i))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def make_tiny_model(d, tokenizer_json):
    """A model dir the roles start from with model.init random: a 2-layer, width-64 Qwen2
    config.json and the given tokenizer."""
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 4096,
           "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": True, "hidden_act": "silu", "eos_token_id": 2,
           "torch_dtype": "float32"}
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    shutil.copy(tokenizer_json, os.path.join(d, "tokenizer.json"))


def status_request(ctx, pb, seedwire, port, sender, timeout_ms=3000):
    """One StatusRequest to the learner's status socket (base port + 5) -> the parsed JSON,
    or None when nothing answers in time. A reply of another schema or type fails."""
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("tcp://127.0.0.1:%d" % (port + 5))
    env = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender=sender)
    env.status_request.what = ""
    s.send(env.SerializeToString())
    try:
        if not s.poll(timeout_ms):
            return None
        rep = pb.Envelope()
        rep.ParseFromString(s.recv())
        assert rep.schema == seedwire.SCHEMA_VERSION and rep.WhichOneof("body") == "status_reply"
        return json.loads(rep.status_reply.json)
    finally:
        s.close()
