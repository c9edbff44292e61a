"""A real Prometheus scrapes a real learner: Debian's prometheus server on loopback, with a
generated scrape config (scrape_interval 1s), scrapes the learner's /metrics while a
short job runs (learner + actor + analyzer processes, tiny random model); the test reads
the series back through Prometheus's HTTP API and checks they arrive and move.

usage: test_prom_scrape.py BIN_DIR PROM_TOOL REPO

Also: the learner's real status document has no number that no metric covers
(prom_tool unmapped on `seedctl status --json`), and /metrics parses with
prometheus_client. Every wait is bounded; the processes and Prometheus's data dir are
removed even on failure. Exits 77 (skipped) only when no prometheus binary exists."""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

BIN, TOOL, REPO = sys.argv[1], sys.argv[2], sys.argv[3]
PROMETHEUS = shutil.which("prometheus")
if not PROMETHEUS:
    print("SKIP: no prometheus binary (Debian package prometheus; deploy/install.sh installs it)")
    sys.exit(77)
PROCS = []


def free_ports(n):
    """A base port whose n ports base..base+n-1 are free on 127.0.0.1."""
    rng = random.Random(os.getpid() * 7919 + 11)
    for _ in range(200):
        base = rng.randrange(20000, 60000, 8)
        socks = []
        try:
            for i in range(n):
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


def write_job(tmp, base, metrics_port):
    model = os.path.join(tmp, "model")
    os.makedirs(model)
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 4096,
           "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2,
           "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": True, "hidden_act": "silu", "eos_token_id": 2,
           "torch_dtype": "float32"}
    json.dump(cfg, open(os.path.join(model, "config.json"), "w"))
    shutil.copy(os.path.join(REPO, "deploy", "models", "tiny", "tokenizer.json"), model)
    job = {
        "job": {"name": "prom-scrape", "run_dir": os.path.join(tmp, "run"), "total_steps": 1000},
        "model": {"path": model, "init": "random", "threads": 1},
        "envs": [{"name": "sokoban", "weight": 1, "split": "train", "max_steps": 2,
                  "options": {"room_size": "6", "boxes": "1"}}],
        "algorithm": {"mode": "seed", "group_size": 4, "stage0_steps": 1, "stage1_steps": 0,
                      "max_staleness": 64},
        "optim": {"groups_per_step": 0, "tokens_per_step": 1024, "micro_batch_tokens": 1024, "lr": 1e-4},
        "sampling": {"max_new_tokens": 8},
        "actor": {"episodes_in_flight": 4, "groups_in_flight": 1},
        "analyzer": {"skill_source": "oracle", "batch_tokens": 4096},
        "endpoints": {"host": "127.0.0.1", "base_port": base, "metrics_port": metrics_port},
        "checkpoint": {"every": 1000, "keep": 1},
        "wire": {"peer_timeout_ms": 4000, "max_msg_bytes": 4 << 20},
    }
    path = os.path.join(tmp, "job.yaml")
    json.dump(job, open(path, "w"), indent=1)  # JSON is YAML
    return path


def start(argv, tmp, name):
    log = open(os.path.join(tmp, name + ".log"), "ab")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    PROCS.append(p)
    return p


def stop_all():
    for p in PROCS:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    t0 = time.time()
    for p in PROCS:
        try:
            p.wait(timeout=max(1, 60 - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def query(prom, expr):
    """Prometheus's instant query API -> [(labels, value)]."""
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (prom, urllib.parse.urlencode({"query": expr}))
    try:
        _, body = http_get(url)
    except OSError:
        return []
    doc = json.loads(body)
    assert doc["status"] == "success", doc
    return [(r["metric"], float(r["value"][1])) for r in doc["data"]["result"]]


def wait_until(what, fn, timeout):
    t0 = time.time()
    last = None
    while time.time() - t0 < timeout:
        last = fn()
        if last:
            print("  %.1f s: %s" % (time.time() - t0, what))
            return last
        time.sleep(0.5)
    raise AssertionError("timed out after %d s waiting for %s (last: %r)" % (timeout, what, last))


def logs(tmp):
    out = []
    for n in sorted(os.listdir(tmp)):
        if n.endswith(".log"):
            out.append("== %s\n%s" % (n, "".join(open(os.path.join(tmp, n), errors="replace")
                                                  .readlines()[-25:])))
    return "\n".join(out)


def main(tmp):
    base = free_ports(8)  # the six endpoints, then /metrics, then Prometheus
    mport, pport = base + 6, base + 7
    job = write_job(tmp, base, mport)
    start([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"], tmp, "learner")
    start([os.path.join(BIN, "seed-actor"), "--job", job, "--id", "actor-0"], tmp, "actor-0")
    start([os.path.join(BIN, "seed-analyzer"), "--job", job, "--id", "analyzer-0"], tmp,
          "analyzer-0")

    def metrics_up():
        try:
            code, body = http_get("http://127.0.0.1:%d/metrics" % mport)
            return body if code == 200 else None
        except OSError:
            return None
    wait_until("the learner's /metrics answers", metrics_up, 120)

    conf = os.path.join(tmp, "prometheus.yml")
    with open(conf, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: seed\n    scrape_timeout: 1s\n"
                "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % mport)
    start([PROMETHEUS, "--config.file=" + conf, "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
           "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"], tmp, "prometheus")

    wait_until("Prometheus scrapes the learner (up == 1)",
               lambda: [v for _, v in query(pport, 'up{job="seed"}') if v == 1], 120)
    first = wait_until("seed_steps_total arrives",
                       lambda: query(pport, 'seed_steps_total{job="seed"}'), 60)
    step0 = first[0][1]
    moved = wait_until("seed_steps_total moves past %g" % step0,
                       lambda: [v for _, v in query(pport, 'seed_steps_total{job="seed"}')
                                if v > step0], 400)
    eps = wait_until("per-env episodes arrive and move",
                     lambda: [v for lb, v in query(pport, 'increase(seed_env_episodes_total[1m])')
                              if lb.get("env") == "sokoban" and v > 0], 120)
    roles = wait_until("per-peer series for the actor and the analyzer",
                       lambda: sorted(lb["role"] for lb, _ in
                                      query(pport, "seed_peer_heartbeat_age_seconds"))
                       == ["actor", "analyzer"], 60)
    info = query(pport, "seed_info")
    assert len(info) == 1 and info[0][0]["seed_job"] == "prom-scrape", info
    _, meta = http_get("http://127.0.0.1:%d/api/v1/metadata?metric=seed_steps_total" % pport)
    types = [m["type"] for m in json.loads(meta)["data"].get("seed_steps_total", [])]
    assert types == ["counter"], "seed_steps_total's type in Prometheus: %s" % types

    # the real status document: every number has a metric; /metrics parses
    st = subprocess.run([os.path.join(BIN, "seedctl"), "status", "tcp://127.0.0.1:%d" % (base + 5),
                         "--json", "--timeout", "5000"], capture_output=True, text=True, timeout=30)
    assert st.returncode == 0, st.stderr
    sj = os.path.join(tmp, "status.json")
    open(sj, "w").write(st.stdout)
    r = subprocess.run([TOOL, "unmapped", sj], capture_output=True, text=True)
    assert r.returncode == 0, ("status fields without a metric (add them to the table in "
                               "learner/prometheus.c):\n" + r.stdout)
    _, body = http_get("http://127.0.0.1:%d/metrics" % mport)
    fams = list(text_string_to_metric_families(body))
    print("prom scrape: steps %g -> %g, sokoban episodes +%g/min, peers %s; %d families from "
          "the live learner" % (step0, moved[0], eps[0], roles, len(fams)))


tmp = tempfile.mkdtemp(prefix="seed-prom-")
ok = False
try:
    main(tmp)
    ok = True
except AssertionError as e:
    print("FAIL: %s\n%s" % (e, logs(tmp)))
finally:
    stop_all()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(0 if ok else 1)
