#!/usr/bin/env bash
# The main job on the embedded default: install, build, fetch the default model, answer a chat
# question with it. Pass a question as the first argument to ask your own.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./scripts/get-models.sh
question=${1:-"How do I return an item I bought online? Answer in two sentences."}
echo "> $question"
exec build/frugal generate -m models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \
  --chat -p "$question" -n 96 --temperature 0 -v
