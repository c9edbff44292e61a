"""Round trip: a checkpoint seed writes (model_save, F32 and BF16) loads in
transformers as the same model.

F32: every tensor transformers loads is bit-identical to the original, and the
config round-trips (same Qwen2Config fields that matter). BF16: every tensor equals
the original rounded to bfloat16 (round to nearest even, as torch's .to(bfloat16)),
and seed loading its own BF16 file gives the logits transformers gives on the
bf16-rounded weights (tolerance 1e-4 x logit scale, as test_forward.py). model_save
makes its directory with its missing parents (saved/NAME/DTYPE below a fresh dir)."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfref

TOOL = sys.argv[1]
ok = True
rng = np.random.default_rng(3)
KEYS = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "rms_norm_eps", "tie_word_embeddings",
        "max_position_embeddings"]
with hfref.tmpdir() as d:
    for name in ("gqa", "tied"):
        src = os.path.join(d, name)
        orig = hfref.make_model(src, name, seed=41)
        V = orig.config.vocab_size
        for dt in ("f32", "bf16"):
            dst = os.path.join(d, "saved", name, dt)
            hfref.run(TOOL, "save", src, dst, dt)
            back = hfref.load_model(dst)
            a, b = orig.config, back.config
            same_cfg = all(getattr(a, k) == getattr(b, k) for k in KEYS) and \
                a.rope_parameters["rope_theta"] == b.rope_parameters["rope_theta"]
            print(f"{'ok  ' if same_cfg else 'FAIL'} {name} {dt}: config.json loads as the same Qwen2Config")
            ok &= same_cfg
            ob, bb = orig.state_dict(), back.state_dict()
            worst = 0.0
            for k, t in ob.items():
                want = t if dt == "f32" else t.to(torch.bfloat16).float()
                worst = max(worst, float((bb[k].float() - want).abs().max()))
            good = worst == 0.0 and set(ob) == set(bb)
            print(f"{'ok  ' if good else 'FAIL'} {name} {dt}: all {len(ob)} tensors exactly "
                  f"{'equal' if dt == 'f32' else 'the bf16 rounding of the originals'} "
                  f"(max diff {worst:.3g})")
            ok &= good
            ids = rng.integers(0, V, size=50).tolist()
            hfref.write_i32(os.path.join(d, "ids"), ids)
            hfref.run(TOOL, "logits", dst, os.path.join(d, "ids"), os.path.join(d, "out"))
            got = hfref.read_f32(os.path.join(d, "out")).reshape(len(ids), V)
            ok &= hfref.report(f"{name} {dt}: seed on its own checkpoint = transformers on it",
                               got, hfref.ref_logits(back, ids), 1e-4)
sys.exit(0 if ok else 1)
