#!/usr/bin/env bash
# Rebuild the shipped agent, deploy/models/agent/model.safetensors: the policy the
# default job starts RL from.
#
# Recipe (deploy/models/agent.yaml): a Qwen2-shaped model (4 layers, width 256, the
# shipped 4096-token tokenizer; 4.2M parameters, 8.4 MB in bf16) from a random init;
# stage 0, behaviour cloning on the built-in sokoban and household experts (the reply's
# think text is the expert's reasoning, env_expert_reason), half the prompts carrying the
# oracle's hindsight skill in the prompt slots (so it learns to use a skill); stage 1, SFT on the oracle's skills for the env's trajectories (so it can
# write one), mixed half and half with acting demonstrations; then the learner stops
# (job.total_steps 0) after evaluating the result greedily on the unseen split
# (RUN/eval.json, copied beside the weights as agent/eval.json).
#
# Usage: deploy/models/train_agent.sh [BUILD_DIR] [key=value ...]
#   BUILD_DIR defaults to build (configured and built if missing); key=value overrides
#   go to the job (e.g. algorithm.stage0_steps=400 model.threads=16).
# Deterministic for a given job.seed and thread count. Wall time: see README.md. The
# shipped weights came from this recipe at commit f942a4c, when stage 0 taught a one-line
# think text; it now teaches the reasoning, so a rebuild differs (docs/RESULTS.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then build=$1; shift; fi
if [ ! -x "$build/bin/seed-learner" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j"$(nproc)" --target seed-learner
fi
run=runs/agent-warmstart
rm -rf "$run"
start=$(date +%s)
"$build/bin/seed-learner" --job deploy/models/agent.yaml job.run_dir="$run" "$@"
ckpt="$run/ckpt/$(cat "$run/ckpt/latest")"
cp "$ckpt/model.safetensors" deploy/models/agent/model.safetensors
cp "$run/eval.json" deploy/models/agent/eval.json
echo "train_agent: $(($(date +%s) - start)) s; deploy/models/agent/ updated from $ckpt"
cat deploy/models/agent/eval.json
