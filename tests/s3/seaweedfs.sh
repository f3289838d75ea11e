#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SeaweedFS (Apache-2.0), the S3-compatible server the object-storage tests
# run (tests/s3/seaweedfs_server.py): built from source once and cached.
#
#   tests/s3/seaweedfs.sh build   # builds it unless cached; prints the binary's path
#   tests/s3/seaweedfs.sh path    # prints the path if built, exits 1 otherwise
#   tests/s3/seaweedfs.sh fetch-go  # fetches the Go release it needs (below); prints its go
#
# The binary goes to ${WEIR_SEAWEEDFS_CACHE:-~/.cache/weir/seaweedfs}/weed
# (with weed.version naming the module version it was built from). The build
# takes 8-9 minutes on two cores and needs about 2 GiB in ~/go (the module
# cache) and ~/.cache/go-build.
#
# What it needs: curl and python3 (both in ./dev's packages), network access
# to the Go module proxy (proxy.golang.org, or $GOPROXY). A Go toolchain is
# taken from, in order: `go` on PATH or /usr/local/go/bin/go when it is
# Go 1.21 or newer (Go then fetches the release SeaweedFS's go.mod asks for
# by itself, GOTOOLCHAIN=auto); otherwise the release go.mod names, fetched
# once from the module proxy as the module golang.org/toolchain (what
# GOTOOLCHAIN does) into the cache directory. Debian 12's own golang (1.19)
# is too old to build it and is not used.
set -euo pipefail

MODULE=github.com/seaweedfs/seaweedfs
VERSION=v0.0.0-20261109003541-7506e5f91cd6
CACHE=${WEIR_SEAWEEDFS_CACHE:-$HOME/.cache/weir/seaweedfs}
BIN=$CACHE/weed
PROXY=${GOPROXY:-https://proxy.golang.org}
PROXY=${PROXY%%,*}
[ "$PROXY" = direct ] && PROXY=https://proxy.golang.org

built() { [ -x "$BIN" ] && [ "$(cat "$CACHE/weed.version" 2>/dev/null)" = "$VERSION" ]; }

# Prints a `go` command of release 1.21 or newer, fetching one if needed.
find_go() {
  local g
  for g in "$(command -v go || true)" /usr/local/go/bin/go "$CACHE/toolchain/bin/go"; do
    [ -n "$g" ] && [ -x "$g" ] || continue
    # go version go1.26.8 linux/amd64 -> 26
    local minor
    minor=$("$g" version | sed -n 's/^go version go1\.\([0-9]*\).*/\1/p')
    if [ -n "$minor" ] && [ "$minor" -ge 21 ]; then
      echo "$g"
      return
    fi
  done
  fetch_go
}

# Fetches the Go release SeaweedFS's go.mod names from the module proxy
# (module golang.org/toolchain) into $CACHE/toolchain; prints its `go`.
fetch_go() {
  local want arch
  want=$(curl -fsSL "$PROXY/$MODULE/@v/$VERSION.mod" | sed -n 's/^go \([0-9.]*\)$/\1/p')
  [ -n "$want" ] || { echo "seaweedfs: cannot read the Go release $MODULE@$VERSION needs from $PROXY" >&2; exit 1; }
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64) arch=arm64 ;;
    *) echo "seaweedfs: no Go toolchain for $(uname -m)" >&2; exit 1 ;;
  esac
  local zip="$CACHE/toolchain.zip" ver="v0.0.1-go$want.linux-$arch"
  echo "seaweedfs: fetching Go $want (golang.org/toolchain@$ver) from $PROXY..." >&2
  mkdir -p "$CACHE"
  curl -fsSL -o "$zip" "$PROXY/golang.org/toolchain/@v/$ver.zip"
  rm -rf "$CACHE/toolchain" "$CACHE/toolchain.tmp"
  python3 - "$zip" "$CACHE/toolchain.tmp" <<'PY'
import os, stat, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        # golang.org/toolchain@v0.0.1-go1.26.6.linux-amd64/bin/go -> bin/go
        parts = info.filename.split("/")
        at = next((i for i, p in enumerate(parts) if "@" in p), None)
        rel = "/".join(parts[at + 1:]) if at is not None else ""
        if not rel or info.is_dir():
            continue
        target = os.path.join(sys.argv[2], rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(info) as src, open(target, "wb") as dst:
            dst.write(src.read())
        mode = info.external_attr >> 16
        if mode & 0o111:
            os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
PY
  mv "$CACHE/toolchain.tmp" "$CACHE/toolchain"
  rm -f "$zip"
  echo "$CACHE/toolchain/bin/go"
}

build() {
  if built; then
    echo "$BIN"
    return
  fi
  local go dir
  go=$(find_go)
  echo "seaweedfs: building $MODULE@$VERSION with $("$go" version) (8-9 minutes on two cores, once)..." >&2
  mkdir -p "$CACHE"
  dir=$(cd "${TMPDIR:-/tmp}" && GOTOOLCHAIN=auto GOFLAGS=-mod=mod "$go" mod download -json "$MODULE@$VERSION" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  (cd "$dir" && GOTOOLCHAIN=auto GOFLAGS=-buildvcs=false nice "$go" build -o "$BIN.tmp" ./weed)
  mv "$BIN.tmp" "$BIN"
  echo "$VERSION" > "$CACHE/weed.version"
  echo "$BIN"
}

case "${1:-build}" in
  build) build ;;
  path) built && echo "$BIN" ;;
  fetch-go) fetch_go ;;
  *) echo "usage: tests/s3/seaweedfs.sh build | path | fetch-go" >&2; exit 2 ;;
esac
