#!/usr/bin/env bash
# Fetches the ONNX Runtime shared library that engine/embed's ONNX provider
# loads, from the npm package onnxruntime-node (which ships the Linux x64
# build), into a cache directory, and prints the library's absolute path on
# stdout (everything else goes to stderr).
#
# Usage (as .ci/run does):
#   export RCPGO_ONNXRUNTIME_LIB="$(bash scripts/fetch-onnxruntime.sh)"
#
# The version must match the C API version of github.com/yalue/onnxruntime_go
# in go.mod (v1.27.0 uses the 1.24.1 headers, ORT_API_VERSION 24).
set -euo pipefail

ORT_VERSION="${RCPGO_ONNXRUNTIME_VERSION:-1.24.1}"
CACHE="${RCPGO_ONNXRUNTIME_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rcpgo/onnxruntime}"
DEST="$CACHE/$ORT_VERSION"
LIB="$DEST/libonnxruntime.so.$ORT_VERSION"

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) ARCH=x64 ;;
  Linux/aarch64) ARCH=arm64 ;;
  *) echo "fetch-onnxruntime: unsupported platform $(uname -s)/$(uname -m)" >&2; exit 1 ;;
esac

if [[ -s "$LIB" ]]; then
  echo "$LIB"
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-onnxruntime: npm is required" >&2; exit 1; }
mkdir -p "$DEST"
TMP="$(mktemp -d "$CACHE/.fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

TGZ="$CACHE/onnxruntime-node-$ORT_VERSION.tgz"
if [[ ! -s "$TGZ" ]]; then
  echo "fetch-onnxruntime: npm pack onnxruntime-node@$ORT_VERSION" >&2
  (cd "$TMP" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >&2)
  mv "$TMP/onnxruntime-node-$ORT_VERSION.tgz" "$TGZ"
fi

MEMBER="$(tar tzf "$TGZ" | grep -E "^package/bin/napi-v[0-9]+/linux/$ARCH/libonnxruntime\.so(\.[0-9.]+)?$" | head -n1 || true)"
if [[ -z "$MEMBER" ]]; then
  echo "fetch-onnxruntime: no linux/$ARCH libonnxruntime.so in onnxruntime-node@$ORT_VERSION" >&2
  exit 1
fi
tar xzf "$TGZ" -C "$TMP" "$MEMBER"
mv "$TMP/$MEMBER" "$LIB.tmp"
chmod 0644 "$LIB.tmp"
mv "$LIB.tmp" "$LIB"
echo "fetch-onnxruntime: installed $LIB" >&2
echo "$LIB"
