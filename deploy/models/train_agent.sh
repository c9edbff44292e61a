#!/usr/bin/env bash
# Rebuild the shipped agent, deploy/models/agent/model.safetensors: the policy the
# default job starts RL from.
#
# Recipe (deploy/models/agent.yaml and the overrides below): a Qwen2-shaped model
# (4 layers, width 256, the shipped 4096-token tokenizer; 4.2M parameters, 8.4 MB in
# bf16) from a random init, trained by behaviour cloning on the built-in experts whose
# replies carry the expert's reasoning as the think text (env_expert_reason), half the
# prompts carrying the oracle's hindsight skill in the prompt slots (so it learns to use
# a skill), with the next-token loss on prompts (optim.sft_prompt_weight) and two steps
# drawn from each expert episode (algorithm.stage0_samples_per_episode):
#   phase 1  household alone, 559 steps (it leaves the "most common object" plateau
#            only on its own; with sokoban in the mix from the start it had not by 255)
#   phase 2  sokoban and household from phase 1's weights, 492 steps
#   phase 3  stage 1: SFT on the oracle's skills for the noisy expert's trajectories
#            (algorithm.stage1_episodes expert; so it can write one), mixed half and
#            half with acting demonstrations, 30 steps, saved in bf16
#   phase 4  behaviour cloning again from phase 3's weights at lr 3e-4, household
#            weighted 4 to sokoban's 1 (household was at 0.09, sokoban at 0.50), 200 steps
#   phase 5  stage 1 again at lr 3e-4, 30 steps, saved in bf16 (phase 4 alone left the
#            skill writing behind)
# Each phase ends with the learner's evaluation (job.total_steps 0; sampled at T = 1 on
# 32 unseen tasks per env); phase 5's is copied beside the weights as agent/eval.json.
#
# Usage: deploy/models/train_agent.sh [BUILD_DIR] [key=value ...]
#   BUILD_DIR defaults to build (configured and built if missing); key=value overrides
#   go to every phase's job (e.g. model.threads=16).
# Deterministic for a given seed and thread count. Wall time on 2 cores: about 6 s a
# step, so phase 1 76 minutes, phase 2 59 minutes, phase 3 5 minutes with its
# evaluation; phase 4 at 3.5-5 s a step 13-17 minutes, phase 5 3 minutes; about 2 hours
# 45 minutes in all (README.md).
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
latest() { echo "$1/ckpt/$(cat "$1/ckpt/latest")"; }
# the shipped agent was cloned with every skilled prompt showing its step line, and with
# the searching expert playing the skilled episodes too
learner() {
    "$build/bin/seed-learner" --job deploy/models/agent.yaml algorithm.stage0_step_skill_keep=1 \
        algorithm.stage0_skill_demos=expert "$@"
}

learner job.run_dir="$run/household" job.seed=7 model.init=random envs=household \
    envs.0.max_steps=30 algorithm.stage0_steps=559 "$@"
learner job.run_dir="$run/both" model.path="$(latest "$run/household")" model.init=load \
    algorithm.stage0_steps=492 "$@"
learner job.run_dir="$run/skills" model.path="$(latest "$run/both")" model.init=load \
    algorithm.stage1_steps=30 algorithm.stage1_episodes=expert model.dtype=bf16 "$@"
learner job.run_dir="$run/household4" model.path="$(latest "$run/skills")" model.init=load \
    envs.0.weight=0.25 algorithm.stage0_steps=200 optim.sft_lr=0.0003 "$@"
learner job.run_dir="$run/skills2" model.path="$(latest "$run/household4")" model.init=load \
    algorithm.stage1_steps=30 algorithm.stage1_episodes=expert optim.sft_lr=0.0003 \
    model.dtype=bf16 "$@"

ckpt=$(latest "$run/skills2")
cp "$ckpt/model.safetensors" deploy/models/agent/model.safetensors
cp "$run/skills2/eval.json" deploy/models/agent/eval.json
echo "train_agent: $(($(date +%s) - start)) s; deploy/models/agent/ updated from $ckpt"
cat deploy/models/agent/eval.json
