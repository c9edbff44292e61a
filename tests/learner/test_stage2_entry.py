"""seed-learner entering stage 2, as a process: AdamW's moments are reset by default (a
fresh RL optimizer, like verl's) and kept with optim.keep_sft_moments=true; the status
document carries the training-signal counts; a micro-batch shorter than the model's
context (with sampling.max_prompt_tokens 0) is refused at start with a clear error; the
warm start trains one drawn step per expert episode with stage0_samples_per_episode 1 and
reports the prompt loss with optim.sft_prompt_weight; algorithm.stage0_step_skill_keep
decides whether a skilled prompt shows its step line.

Each run: a tiny random model, one warm-start step, then the learner waits in stage 2
(no actors); SIGTERM writes the final checkpoint, whose optimizer.safetensors records
the AdamW step count (0 after a reset, 1 when kept). Bounded waits only.
Usage: test_stage2_entry.py BIN_DIR PROJECT_ROOT
"""
import json, os, signal, struct, subprocess, sys, tempfile, time

BIN, ROOT = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "deploy", "envserver"))
import seedwire  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))
import looptools  # noqa: E402
import zmq  # noqa: E402

pb = seedwire.load_pb2()


def make_job(tmp, port, **over):
    model = os.path.join(tmp, "model")
    os.makedirs(model, exist_ok=True)
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                   "vocab_size": 4096, "hidden_size": 32, "intermediate_size": 64,
                   "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                   "max_position_embeddings": 1024, "rms_norm_eps": 1e-6,
                   "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu",
                   "eos_token_id": 2, "torch_dtype": "float32"}, f)
    with open(os.path.join(ROOT, "deploy", "models", "tiny", "tokenizer.json"), "rb") as src:
        open(os.path.join(model, "tokenizer.json"), "wb").write(src.read())
    job = {"job": {"name": "stage2", "run_dir": os.path.join(tmp, "run"), "total_steps": 5},
           "model": {"path": model, "init": "random", "threads": 1},
           "envs": [{"name": "ezpoints", "weight": 1, "split": "train", "max_steps": 2}],
           "algorithm": {"stage0_steps": 1, "stage1_steps": 0},
           "optim": {"groups_per_step": 0, "tokens_per_step": 1024, "micro_batch_tokens": 1024},
           "sampling": {"max_new_tokens": 8},
           "endpoints": {"host": "127.0.0.1", "base_port": port}}
    for k, v in over.items():
        sec, name = k.split("__")
        job[sec][name] = v
    path = os.path.join(tmp, "job.yaml")
    json.dump(job, open(path, "w"))
    return path


def status(port):
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("tcp://127.0.0.1:%d" % (port + 5))
    env = pb.Envelope(schema=seedwire.SCHEMA_VERSION, sender="test")
    env.status_request.what = ""
    s.send(env.SerializeToString())
    try:
        if not s.poll(2000):
            return None
        rep = pb.Envelope()
        rep.ParseFromString(s.recv())
        return json.loads(rep.status_reply.json)
    finally:
        s.close()


def adamw_step(ckpt_dir):
    latest = open(os.path.join(ckpt_dir, "latest")).read().strip()
    with open(os.path.join(ckpt_dir, latest, "optimizer.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return int(json.loads(f.read(n))["__metadata__"]["adamw_step"])


def run(keep):
    tmp = tempfile.mkdtemp(prefix="stage2_")
    port = looptools.free_base_port()
    job = make_job(tmp, port, optim__keep_sft_moments=keep)
    log = open(os.path.join(tmp, "learner.log"), "wb")
    p = subprocess.Popen([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        st, t0 = None, time.time()
        while time.time() - t0 < 240 and p.poll() is None:
            st = status(port)
            if st and st.get("stage") == "rl":
                break
            time.sleep(0.5)
        assert st and st.get("stage") == "rl", (st, open(log.name).read()[-3000:])
        c = st["counts"]
        for k in ("scored_off_version", "skipped_nonfinite", "dropped_overlong",
                  "episodes_error"):
            assert c[k] == 0, (k, c)
        assert st["episode_errors"] == {} and "opd_adv" in st and "opd_adv" in st["loss"], st
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, open(log.name).read()[-3000:]
    return adamw_step(os.path.join(tmp, "run", "ckpt"))


def refused():
    tmp = tempfile.mkdtemp(prefix="stage2_bad_")
    job = make_job(tmp, looptools.free_base_port(), optim__micro_batch_tokens=512, optim__tokens_per_step=512)
    r = subprocess.run([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"],
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "optim.micro_batch_tokens: expected at least the model's " \
        "context length 1024" in out, out[-3000:]


def warm_start(per_episode, prompt_weight, noise=0.0, keep=0.5, full=False, tokens=1024,
               demos="informed"):
    """A 2-step warm start on household (`tokens` a step): the last step's log line
    (response NLL, prompt NLL, samples, episodes, samples off the expert's path), and
    with full also (samples with a skill, step lines shown, step lines they could show,
    episodes the informed expert played)."""
    tmp = tempfile.mkdtemp(prefix="stage0_")
    job = make_job(tmp, looptools.free_base_port(), job__total_steps=0,
                   algorithm__stage0_steps=2,
                   algorithm__stage0_samples_per_episode=per_episode,
                   optim__sft_prompt_weight=prompt_weight,
                   algorithm__stage0_expert_noise=noise,
                   algorithm__stage0_step_skill_keep=keep, optim__tokens_per_step=tokens,
                   algorithm__stage0_skill_demos=demos)
    with open(job) as f:
        j = json.load(f)
    j["envs"] = [{"name": "household", "weight": 1, "split": "train", "max_steps": 30}]
    json.dump(j, open(job, "w"))
    r = subprocess.run([os.path.join(BIN, "seed-learner"), "--job", job, "--id", "learner"],
                       capture_output=True, text=True, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    line = [x for x in out.splitlines() if "stage 0 step 2/2:" in x]
    assert line, out[-3000:]
    w = line[-1].split("sft nll ")[1].split()
    tail = line[-1].split(" in ")[1].split()
    off = int(line[-1].split("episodes (")[1].split()[0])
    got = float(w[0]), float(w[2].rstrip("),")), int(tail[0]), int(tail[3]), off
    if not full:
        return got
    # N with a skill, A of their B step lines shown; M episodes by the informed expert
    sk = line[-1].split("path; ")[1].split()
    return got + (int(sk[0]), int(sk[4]), int(sk[7]), int(sk[11]))


# stage0_samples_per_episode and optim.sft_prompt_weight: the same expert episode, all
# its steps without the prompt loss against one drawn step with it
nll_all, prompt_all, n_all, ep_all, off_all = warm_start(0, 0.0)
nll_one, prompt_one, n_one, ep_one, off_one = warm_start(1, 1.0)
assert prompt_all == 0.0 and prompt_one > 1.0, (prompt_all, prompt_one)
assert n_all >= 2 * ep_all and n_one == ep_one >= 2, (n_all, ep_all, n_one, ep_one)
print("warm start: %d samples of %d episodes with every step, %d of %d with one step of "
      "each, prompt NLL %.3f" % (n_all, ep_all, n_one, ep_one, prompt_one))
# algorithm.stage0_expert_noise reaches the warm start: without it no sample's state is
# off the expert's path, with 0.5 some are (warmstart_test checks their labels)
_, _, n_noisy, _, off_noisy = warm_start(0, 0.0, noise=0.5)
assert off_all == 0 and off_one == 0 and 0 < off_noisy < n_noisy, (off_all, off_one, off_noisy,
                                                                    n_noisy)
print("warm start with stage0_expert_noise 0.5: %d of %d samples off the expert's path"
      % (off_noisy, n_noisy))

# algorithm.stage0_step_skill_keep: a prompt with the oracle's skill shows the step line of
# its step always (1) or never (0), so acting on a skill does not wait for a step line
_, _, n_all1, ep1, _, skilled1, shown1, lines1, informed1 = warm_start(0, 0.0, keep=1.0,
                                                                      full=True, tokens=16384)
_, _, _, _, _, skilled0, shown0, lines0, informed0 = warm_start(0, 0.0, keep=0.0, full=True,
                                                                tokens=16384, demos="expert")
assert 0 < skilled1 < n_all1 and 0 < shown1 == lines1 <= skilled1, (n_all1, skilled1, shown1,
                                                                     lines1)
assert 0 < skilled0 and shown0 == 0 < lines0, (skilled0, shown0, lines0)
print("warm start step lines: %d of %d shown with stage0_step_skill_keep 1, %d of %d with 0"
      % (shown1, lines1, shown0, lines0))
# algorithm.stage0_skill_demos: household's informed expert plays the episodes with a skill
# (about half), the searching expert all of them with `expert`
assert 0 < informed1 < ep1 and informed0 == 0, (informed1, ep1, informed0)
print("warm start: %d of %d episodes by the informed expert (stage0_skill_demos informed), "
      "%d with expert" % (informed1, ep1, informed0))

assert run(False) == 0, "entering stage 2 did not reset the AdamW state"
assert run(True) == 1, "optim.keep_sft_moments=true did not keep the AdamW state"
refused()
print("stage 2 entry: moments reset by default, kept on request; short micro-batch refused")
