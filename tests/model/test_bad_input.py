"""Bad input gives a clear error and no crash (run under the ASan/UBSan build).

model_tool bad runs every refused branch of the workload entry points in C (token id
negative or >= vocab in forward_cached, forward_logits, score and training; slot out
of range or repeated; sequence longer than max_seq_len; more tokens than
max_train_tokens; backward without its forward; dentropy without entropy; NaN
gradients; bad AdamW settings; bad limits/backend/config) and checks each message
names the bad value. Here, checkpoints transformers saved are then damaged: a
config.json disagreeing with the tensor shapes, a missing tensor, a tensor of an
integer dtype, a missing config.json, a directory in the place of config.json,
model.safetensors or model.safetensors.index.json, a file in the place of the model
directory; each load must fail with exit status 1 and a sentence naming the tensor or file."""
import json
import os
import shutil
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfref

TOOL = sys.argv[1]
ok = True


def expect_fail(label, args, *needles):
    global ok
    r = hfref.run(TOOL, *args, check=False)
    good = r.returncode == 1 and all(n in r.stderr for n in needles)
    print(f"{'ok  ' if good else 'FAIL'} {label}: exit {r.returncode}: {r.stderr.strip()}")
    ok &= good


with hfref.tmpdir() as d:
    path = os.path.join(d, "m")
    hfref.make_model(path, "gqa", seed=1)
    r = hfref.run(TOOL, "bad", path, check=False)
    print(r.stdout + r.stderr)
    ok &= r.returncode == 0
    ids, out = os.path.join(d, "ids"), os.path.join(d, "out")
    hfref.write_i32(ids, [1, 2, 3])
    st = os.path.join(path, "model.safetensors")
    tensors = load_file(st)

    def variant(label, cfg_change=None, drop=None, retype=None):
        p = os.path.join(d, label)
        shutil.copytree(path, p)
        if cfg_change:
            with open(os.path.join(p, "config.json")) as f:
                cfg = json.load(f)
            cfg.update(cfg_change)
            with open(os.path.join(p, "config.json"), "w") as f:
                json.dump(cfg, f)
        if drop or retype:
            t = {k: v for k, v in tensors.items() if k != drop}
            if retype:
                t[retype] = t[retype].astype(np.int64)
            save_file(t, os.path.join(p, "model.safetensors"), metadata={"format": "pt"})
        return p

    expect_fail("config.json hidden_size disagrees with the tensors",
                ["logits", variant("hidden", {"hidden_size": 108}), ids, out],
                "model.embed_tokens.weight", "108")
    expect_fail("config.json intermediate_size disagrees",
                ["logits", variant("inter", {"intermediate_size": 199}), ids, out],
                "gate_proj.weight", "199")
    expect_fail("config.json has one layer more than the file",
                ["logits", variant("layers", {"num_hidden_layers": 4}), ids, out],
                "model.layers.3.", "missing")
    expect_fail("a tensor is missing",
                ["logits", variant("drop", drop="model.layers.1.self_attn.k_proj.bias"), ids, out],
                "model.layers.1.self_attn.k_proj.bias", "missing")
    expect_fail("a tensor has an integer dtype",
                ["logits", variant("i64", retype="model.norm.weight"), ids, out],
                "model.norm.weight")
    p = variant("nocfg")
    os.remove(os.path.join(p, "config.json"))
    expect_fail("config.json missing", ["logits", p, ids, out], "config.json")
    expect_fail("a directory without a checkpoint", ["logits", os.path.join(d, "nope"), ids, out],
                "nope")
    # a directory where a file belongs (ftell once sized it ~2^63 bytes: ASan aborted), and a
    # file where the model directory belongs
    for name in ("config.json", "model.safetensors", "model.safetensors.index.json"):
        p = variant("dir_" + name)
        if name.endswith(".index.json"):
            os.remove(os.path.join(p, "model.safetensors"))
        else:
            os.remove(os.path.join(p, name))
        os.mkdir(os.path.join(p, name))
        expect_fail(f"{name} is a directory", ["logits", p, ids, out],
                    os.path.join(p, name) + ": is a directory")
    cfg_file = os.path.join(path, "config.json")
    expect_fail("the model directory is a file", ["logits", cfg_file, ids, out],
                cfg_file, "Not a directory")
    for bad in ([1, -5, 2], [1, 503, 2]):
        hfref.write_i32(ids, bad)
        expect_fail(f"token id {bad[1]} in a prompt", ["logits", path, ids, out], str(bad[1]))
sys.exit(0 if ok else 1)
