#!/usr/bin/env bash
# Set a fresh machine up, build seed (Release) and launch the embedded default job:
# built-in sokoban, RL (mode seed) from the shipped agent (deploy/models/agent), CPU,
# learner + 2 actors + 1 analyzer on loopback; it ends by itself and prints the final evaluation.
# Extra arguments go to `seedctl launch` (a job file and/or key=value overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
# Running a job needs no Python; the reference packages are for the tests.
SEED_SKIP_PYTHON=1 ./deploy/install.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target seedctl seed-learner seed-actor seed-analyzer
echo "quickstart: launching; watch it from another shell with"
echo "    build/bin/seedctl status tcp://127.0.0.1:5555 --watch 5"
exec build/bin/seedctl launch "$@"
