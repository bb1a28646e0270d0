#!/bin/sh
# Assemble the image's build context: OUT/python/concord_openhands/ (the
# package's .py files) and OUT/python/concord_openhands/bin/concord.
#   context.sh OUT CONCORD_BIN
# The binary must be built for the image's platform (linux/amd64 by default):
#   CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -o bin/concord-linux-amd64 ./cmd/concord
set -eu
out=$1 bin=$2
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out/python"
mkdir -p "$out/python/concord_openhands/bin"
cp "$here"/concord_openhands/*.py "$out/python/concord_openhands/"
cp "$bin" "$out/python/concord_openhands/bin/concord"
chmod 755 "$out/python/concord_openhands/bin/concord"
echo "docker context in $out (binary: $("$bin" version 2>/dev/null | head -1 || echo "$bin"))"
