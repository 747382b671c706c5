#!/usr/bin/env bash
# The main job on the embedded default: install, build, fetch the default models, then start the
# whole stack with `frugal up` (2 workers on free ports + the gateway with the embedded semantic
# cache on 127.0.0.1:8000), ask a question twice through it (the second answer comes from the
# cache), and keep serving until Ctrl-C. Pass a question as the first argument to ask your own.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./scripts/get-models.sh
question=${1:-"How do I return an item I bought online? Answer in two sentences."}
exec build/frugal up --workers 2 --port "${FRUGAL_PORT:-8000}" --ask "$question"
