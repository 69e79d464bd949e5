#!/usr/bin/env bash
# The endpoint picker of the Gateway API Inference Extension (the picker llm-d-router took
# over) against three `qm serve` processes, driven through its ext_proc API in place of Envoy.
# Needs Go (1.25 or newer) and the Go module proxy; builds in ~/.cache/qm-epp, never in the
# repository. Usage: scripts/picker/run.sh [OUT_DIR]   (figures.json and the logs go there)
set -euo pipefail

# v1.5.0: the module's last release with the full picker (cmd/epp); from v1.6.0 it ships only
# the round-robin "lightweight" picker, and llm-d-router's own module is not on the proxy.
EPP_VERSION="${EPP_VERSION:-v1.5.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${QM_EPP_CACHE:-$HOME/.cache/qm-epp}"
OUT="${1:-$CACHE/run-$(date +%Y%m%d-%H%M%S)}"
export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "run.sh: needs Go (https://go.dev/dl/)" >&2; exit 2; }

mkdir -p "$CACHE/epp-$EPP_VERSION"
if [ ! -x "$CACHE/epp-$EPP_VERSION/epp" ]; then
  echo "building the endpoint picker $EPP_VERSION (a few minutes the first time)"
  (
    cd "$CACHE/epp-$EPP_VERSION"
    [ -f go.mod ] || go mod init qm-epp >/dev/null 2>&1
    go get "sigs.k8s.io/gateway-api-inference-extension/cmd/epp@$EPP_VERSION" 2>get.log ||
      { cat get.log >&2; exit 1; }
    go build -o epp sigs.k8s.io/gateway-api-inference-extension/cmd/epp
  )
fi
(cd "$ROOT/scripts/picker" && go build -o "$CACHE/picker-driver" .)

if [ ! -x "$ROOT/dist/qm" ] || [ -n "${QM_REBUILD:-}" ]; then
  (cd "$ROOT" && bun run build)
fi

cd "$ROOT"
exec "$CACHE/picker-driver" -qm "$ROOT/dist/qm" -epp "$CACHE/epp-$EPP_VERSION/epp" \
  -config "$ROOT/scripts/picker/epp-config.yaml" -version "$EPP_VERSION" -out "$OUT"
