"""OpenBLAS's kernels: a DYNAMIC_ARCH OpenBLAS falls back to its Prescott (SSE3) kernels
on a CPU model it does not recognise, a tenth of the AVX-512 sgemm rate; a process of
seed's then sets OPENBLAS_CORETYPE and executes itself again (model/cpu/matmul.c).

Checks, through model_tool (linked like every seed program):
  - on a CPU with AVX2 and FMA (from /proc/cpuinfo) and no OPENBLAS_CORETYPE set, the
    kernels in use are not Prescott's (fails where the fallback is not corrected);
  - a user's own OPENBLAS_CORETYPE is kept (Prescott asked for is Prescott run), so the
    correction never overrides a choice and cannot loop.
Usage: test_blas.py MODEL_TOOL
"""
import os
import subprocess
import sys

TOOL = sys.argv[1]


def core(env):
    r = subprocess.run([TOOL, "blas"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


flags = set()
with open("/proc/cpuinfo") as f:
    for line in f:
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
got = core(env)
if {"avx2", "fma"} <= flags:
    assert got != "Prescott", "OpenBLAS runs its Prescott fallback on an AVX2 CPU"
    print("ok: AVX2/FMA CPU (avx512f %s): OpenBLAS kernels %s" % ("avx512f" in flags, got))
else:
    print("ok: CPU without AVX2/FMA: OpenBLAS kernels %s (nothing to correct)" % got)
mine = core(dict(env, OPENBLAS_CORETYPE="Prescott"))
assert mine == "Prescott", ("a user's OPENBLAS_CORETYPE was overridden", mine)
print("ok: OPENBLAS_CORETYPE=Prescott set by the user is kept")
