#!/usr/bin/env bash
# Runs every test sandrun has, on a fresh machine: it installs what the
# tests need first. Usage: ./scripts/test.sh   (CI runs exactly this.)
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }

# Go toolchain: this repo needs Go >= 1.26 (go.mod).
if ! need go; then
  export PATH="$PATH:/usr/local/go/bin"
fi
need go || { echo "test.sh: Go >= 1.26 is required (not found on PATH)" >&2; exit 1; }

# Debian packages the tests use. Installed only when missing.
pkgs=()
# The policy's differential test runs commands under the real dash and
# bash (the shells /bin/sh is on Debian and elsewhere).
need dash || pkgs+=(dash)
need bash || pkgs+=(bash)
need make || pkgs+=(make)
# The CLI's completion test completes in a real bash with bash-completion
# loaded, as users' shells have it.
[ -f /usr/share/bash-completion/bash_completion ] || pkgs+=(bash-completion)
# The docker backend's tests import an image made from busybox-static
# (no registry is reachable); the engine itself comes with the machine.
# Debian's dynamically linked busybox package does not do: in an image or
# a chroot without a libc its applets cannot start.
if ! [ -x /bin/busybox ] || ! LC_ALL=C ldd /bin/busybox 2>&1 | grep -q 'not a dynamic executable'; then
  pkgs+=(busybox-static)
fi
need mksquashfs || pkgs+=(squashfs-tools)
# The ssh backend's tests run Debian's OpenSSH server on loopback, and
# ssh-agent/ssh-add from the client package.
[ -x /usr/sbin/sshd ] || pkgs+=(openssh-server)
need ssh-agent && need ssh-add || pkgs+=(openssh-client)
# The dashboards' and alert rules' tests run Prometheus and promtool.
need prometheus && need promtool || pkgs+=(prometheus)
# The bench module's smoke test runs asynq on Debian's redis-server and
# River on Debian's PostgreSQL (its own data dir and port: a cluster the
# package may start is not used).
need redis-server || [ -x /usr/bin/redis-server ] || pkgs+=(redis-server)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || pkgs+=(postgresql)
if [ ${#pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && need apt-get; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"
  else
    echo "test.sh: missing packages: ${pkgs[*]} (install them, or run as root on Debian)" >&2
    exit 1
  fi
fi

echo "== go vet"
go vet ./...
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "== golangci-lint (depguard: os/exec only in the local backend)"
go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...
echo "== go test (race detector on)"
go test -race -count=1 -timeout 30m ./...
# bench/ is a module of its own: the commands above do not descend into it.
echo "== bench module (smoke)"
(cd bench && go vet ./... && go test -count=1 -timeout 10m ./...)
