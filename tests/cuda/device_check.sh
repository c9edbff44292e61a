#!/usr/bin/env bash
# device_check.sh — the one GPU check of the CUDA backend: build, the parity tests, and
# the benchmarks, printed as one table. Sized for one H200 machine with 16 cores in
# under 8 minutes (every step has its own timeout; a step that fails or times out is
# reported and the rest still run).
#
#   tests/cuda/device_check.sh bundle   (on a build machine without a GPU) build Release
#                                       with CUDA and put the test and bench binaries and
#                                       the shared libraries they need into
#                                       build-cuda-dev/devcheck, for a GPU machine whose
#                                       image lacks the project's build dependencies
#   tests/cuda/device_check.sh [run]    (on the GPU machine) build from source when the
#                                       dependencies are there, else use the carried
#                                       bundle (DEVCHECK_BUNDLE=1: the bundle even
#                                       then); run everything; results also go to
#                                       $OUT/device_check.txt when OUT is set
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
TARGETS="cuda_parity cuda_kernels cuda_bench"

bundle() {
    set -e
    # RelWithDebInfo: -O2 without Release's -march=native, since another CPU runs it
    cmake -S . -B build-cuda-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEED_CUDA=ON >/dev/null
    cmake --build build-cuda-dev --target $TARGETS -j"$(nproc)"
    local d=build-cuda-dev/devcheck
    rm -rf "$d" && mkdir -p "$d/bin" "$d/lib"
    cp build-cuda-dev/tests/cuda/cuda_parity build-cuda-dev/tests/cuda/cuda_kernels \
        build-cuda-dev/bench/cuda/cuda_bench "$d/bin/"
    strip --strip-debug "$d"/bin/*
    # every shared library but the C runtime's own (the GPU image has a newer glibc)
    for b in "$d"/bin/*; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u |
        grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
        while read -r l; do cp -L "$l" "$d/lib/"; done
    du -sh "$d"
}

if [ "${1:-run}" = bundle ]; then
    bundle
    exit
fi

RES=$(mktemp)
row() { printf '%-58s %s\n' "$1" "$2" | tee -a "$RES"; }
step() { # name timeout command...: run, keep its output, report ok/FAIL/SKIP/TIMEOUT
    local name=$1 t=$2
    shift 2
    local log
    log=$(mktemp)
    local t0=$SECONDS
    timeout "$t" "$@" >"$log" 2>&1
    local rc=$?
    local st=ok
    [ $rc = 77 ] && st=SKIP
    [ $rc = 124 ] && st="TIMEOUT ${t}s"
    [ $rc != 0 ] && [ $rc != 77 ] && [ $rc != 124 ] && st="FAIL rc=$rc"
    echo "== $name ($st, $((SECONDS - t0)) s)"
    cat "$log"
    grep -E '^(train|decode|score|gemm) ' "$log" | while read -r l; do row "  $l" ""; done
    row "$name" "$st"
    rm -f "$log"
}

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
nvcc --version 2>/dev/null | tail -1
nproc

BIN=""
if [ -z "${DEVCHECK_BUNDLE:-}" ] && command -v cmake >/dev/null && command -v nvcc >/dev/null &&
    pkg-config --exists openblas libpcre2-8 libutf8proc libcjson yaml-0.1 libzmq libprotobuf-c \
        libmicrohttpd 2>/dev/null && command -v protoc-c >/dev/null; then
    t0=$SECONDS
    if timeout 300 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSEED_CUDA=ON >/dev/null &&
        timeout 300 cmake --build build-gpu --target $TARGETS -j"$(nproc)" >build-gpu/build.log 2>&1; then
        BIN=build-gpu
        row "build from source (Release, sm_90 + PTX)" "ok $((SECONDS - t0)) s"
    else
        tail -30 build-gpu/build.log
        row "build from source" "FAIL"
    fi
fi
if [ -z "$BIN" ]; then
    if [ -d build-cuda-dev/devcheck/bin ]; then
        export LD_LIBRARY_PATH="$ROOT/build-cuda-dev/devcheck/lib:${LD_LIBRARY_PATH:-}"
        mkdir -p build-carried/tests/cuda build-carried/bench/cuda
        cp build-cuda-dev/devcheck/bin/cuda_parity build-cuda-dev/devcheck/bin/cuda_kernels \
            build-carried/tests/cuda/
        cp build-cuda-dev/devcheck/bin/cuda_bench build-carried/bench/cuda/
        BIN=build-carried
        row "build: the carried bundle (this image lacks the build dependencies)" "ok"
    else
        row "build: no dependencies here and no carried bundle" "FAIL"
        cat "$RES"
        exit 1
    fi
fi
# cuBLAS and NCCL are loaded with dlopen: make the toolkit's or PyTorch's copies findable
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    $(python3 -c 'import nvidia, os; p = nvidia.__path__[0]; print(" ".join(os.path.join(p, d, "lib") for d in os.listdir(p)))' 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$d"
done

export OMP_NUM_THREADS=$(nproc)
step "cuda_kernels: every kernel vs the CPU's" 120 $BIN/tests/cuda/cuda_kernels
step "cuda_parity: whole model vs the CPU backend" 180 $BIN/tests/cuda/cuda_parity
B=$BIN/bench/cuda/cuda_bench
step "bf16 GEMM peak (PyTorch)" 60 python3 bench/cuda/torch_ref.py peak 0 0
step "train 0.5B cuda (8192 tokens)" 90 $B train 0.5b cuda 8192 3
step "train 0.5B torch eager (8192 tokens)" 90 python3 bench/cuda/torch_ref.py 0.5b 8192 3
step "train 1.5B cuda (8192 tokens)" 120 $B train 1.5b cuda 8192 3
step "train 1.5B torch eager (8192 tokens)" 90 python3 bench/cuda/torch_ref.py 1.5b 8192 3
step "train 0.5B cpu backend (1024 tokens, 16 cores)" 90 $B train 0.5b cpu 1024 1
for b in 1 16 64 256; do
    step "decode 0.5B cuda batch $b (512-token prompts)" 60 $B decode 0.5b cuda $b 32
done
step "paired scoring 0.5B cuda (64 x 640 tokens)" 60 $B score 0.5b cuda 64
step "train 0.5B torch.compile (8192 tokens)" 150 python3 bench/cuda/torch_ref.py 0.5b 8192 3 compile

echo
echo "================ device_check summary ================"
cat "$RES"
[ -n "${OUT:-}" ] && cp "$RES" "$OUT/device_check.txt"
rm -f "$RES"
