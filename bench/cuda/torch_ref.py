"""torch_ref — the PyTorch figures cuda_bench is compared with, on the same GPU and shapes:
the measured bf16 GEMM peak (8192^3, the MFU denominator) and a training step of a
Qwen2.5-shaped model with random weights (transformers' Qwen2ForCausalLM in bf16, SDPA
attention, fused AdamW; no fp32 master copy, so it does less work than seed's backend),
eager and, when it works, torch.compile. One line per figure, as cuda_bench prints.

usage: torch_ref.py SHAPE TOKENS STEPS [compile]"""
import sys
import time

import torch


def gemm_peak():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / 10
    return 2 * 8192**3 / dt / 1e12


def shape(name):
    from transformers import Qwen2Config

    if name == "1.5b":
        kw = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                  num_attention_heads=12, num_key_value_heads=2)
    else:
        kw = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2)
    return Qwen2Config(vocab_size=151936, tie_word_embeddings=True, rope_theta=1e6,
                       max_position_embeddings=32768, **kw)


def train(name, tokens, steps, compiled):
    from transformers import Qwen2ForCausalLM

    cfg = shape(name)
    cfg._attn_implementation = "sdpa"
    m = Qwen2ForCausalLM(cfg).to("cuda", torch.bfloat16)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5, fused=True)
    seq = min(tokens, 1024)
    ids = torch.randint(0, cfg.vocab_size, (tokens // seq, seq), device="cuda")
    fwd = torch.compile(m) if compiled else m

    def step():
        out = fwd(input_ids=ids, labels=ids)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / steps
    n = sum(p.numel() for p in m.parameters())
    L, H, D = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    T = ids.numel()
    flops = 6.0 * n * T + 12.0 * L * H * D * (seq / 2.0) * T
    mode = "torch_compile" if compiled else "torch_eager"
    print(f"train {name} {mode} tokens={T} step_s={dt:.3f} tokens_per_s={T / dt:.0f} "
          f"model_tflops={flops / dt / 1e12:.2f}", flush=True)


if __name__ == "__main__":
    name, tokens, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if name == "peak":
        print(f"gemm bf16 8192^3 measured_tflops={gemm_peak():.1f}", flush=True)
    else:
        train(name, tokens, steps, len(sys.argv) > 4 and sys.argv[4] == "compile")
