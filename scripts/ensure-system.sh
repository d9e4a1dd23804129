#!/usr/bin/env bash
# System pieces termgym needs: a Docker engine (installed and started where the machine
# allows it, with gVisor's runsc registered as a runtime), bubblewrap, slirp4netns, e2fsprogs,
# iptables, debootstrap, tmux, promtool/prometheus and a C compiler (the nests' launcher).
# Where something cannot be had, say what is missing and carry on: the bubblewrap backend
# works without Docker, and runsc and the compiler are optional.
#
# With --browser, also Debian's chromium, which only the HTML report's browser test needs
# (tests/report/test_browser.py screenshots the report headless; `make test` asks for it).
set -uo pipefail

browser=false
for arg in "$@"; do
    case "$arg" in
        --browser) browser=true ;;
        *) printf 'ensure-system: expected --browser or nothing, found %s\n' "$arg" >&2; exit 2 ;;
    esac
done

log() { printf 'ensure-system: %s\n' "$*"; }

as_root=false
[ "$(id -u)" = 0 ] && as_root=true
has_apt=false
command -v apt-get >/dev/null 2>&1 && has_apt=true
apt_updated=false

apt_install() {
    if ! $as_root || ! $has_apt; then
        log "missing: $* (install it: needs root and apt-get, here root=$as_root apt=$has_apt)"
        return 1
    fi
    if ! $apt_updated; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
        apt_updated=true
    fi
    log "installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
        >/dev/null 2>&1 || { log "could not install $*"; return 1; }
}

docker_answers() { timeout 10 docker info >/dev/null 2>&1; }

ensure_docker() {
    if docker_answers; then
        log "docker: an engine answers"
        return 0
    fi
    if [ -n "${DOCKER_HOST:-}" ]; then
        log "docker: nothing answers at DOCKER_HOST=$DOCKER_HOST; leaving it alone (bwrap is used)"
        return 1
    fi
    command -v dockerd >/dev/null 2>&1 || apt_install docker.io || {
        log "docker: not available; the bwrap backend will be used"
        return 1
    }
    if ! $as_root; then
        log "docker: installed but not running, and starting dockerd needs root;" \
            "start it (sudo systemctl start docker) or the bwrap backend will be used"
        return 1
    fi
    if ! pgrep -x dockerd >/dev/null 2>&1; then
        config=$(dockerd_config)
        log "docker: starting dockerd in the background (config: $config," \
            "log: /var/log/termgym-dockerd.log)"
        # In a session of its own (no hangup when ours ends), with every signal at its
        # default: containers inherit the daemon's dispositions, and an ignored one handed
        # down by whatever started this script would reach the agent's programs.
        setsid python3 "$(dirname "${BASH_SOURCE[0]}")/../termgym/isolation/_signals.py" \
            dockerd --config-file "$config" >/var/log/termgym-dockerd.log 2>&1 </dev/null &
    fi
    for _ in $(seq 1 60); do
        if docker_answers; then
            log "docker: an engine answers"
            return 0
        fi
        sleep 1
    done
    log "docker: dockerd did not answer within 60 s (see /var/log/termgym-dockerd.log);" \
        "the bwrap backend will be used"
    return 1
}

# The engine's configuration when termgym starts it: the machine's own daemon.json, plus
# gVisor's runsc as the runtime "runsc" when it is installed (sandboxes have no network
# under it: termgym's sandboxes have none unless a task asks, and runsc cannot give one here).
dockerd_config() {
    local config=/var/lib/termgym/dockerd.json
    mkdir -p /var/lib/termgym
    python3 - "$config" <<'PY'
import json, os, shutil, sys
base = {}
if os.path.exists("/etc/docker/daemon.json"):
    with open("/etc/docker/daemon.json") as handle:
        base = json.load(handle)
runsc = shutil.which("runsc")
if runsc:
    base.setdefault("runtimes", {})["runsc"] = {"path": runsc, "runtimeArgs": ["--network=none"]}
with open(sys.argv[1], "w") as handle:
    json.dump(base, handle, indent=2)
PY
    echo "$config"
}

ensure_tool() {  # ensure_tool COMMAND PACKAGE
    if command -v "$1" >/dev/null 2>&1; then
        log "$1: present"
    else
        apt_install "$2" || true
    fi
}

ensure_tool runsc runsc  # before the engine starts, so that it is registered
ensure_docker || true
if docker_answers && ! timeout 10 docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q runsc; then
    log "docker: the running engine has no runsc runtime; runtime='runsc' will be refused" \
        "(docs/security.md says how to register it)"
fi
ensure_tool bwrap bubblewrap
# A networked bwrap sandbox's own network (slirp4netns), docker sandboxes' writable layers
# on a filesystem of their disk limit (mkfs.ext4), the rules that keep sandboxes off the
# host's addresses (iptables): docs/security.md.
ensure_tool slirp4netns slirp4netns
ensure_tool mkfs.ext4 e2fsprogs
ensure_tool iptables iptables
ensure_tool debootstrap debootstrap
ensure_tool tmux tmux
# promtool and a Prometheus server: the alerting rules' tests and the live-metrics scrape test
# (docs/monitoring.md). Debian's package; the tests start their own server on loopback.
ensure_tool promtool prometheus
# The nests' launcher (termgym/verifier/nest_launch.c), compiled statically on the host:
# without a compiler the Python entry does its work, only slower (docs/security.md).
ensure_tool cc gcc
ensure_tool musl-gcc musl-tools  # a tenth of the size of a static glibc program
if command -v dpkg >/dev/null 2>&1 && ! dpkg -s libc6-dev >/dev/null 2>&1; then
    apt_install libc6-dev || true
fi
if $browser; then
    ensure_tool chromium chromium
fi
if ! command -v bwrap >/dev/null 2>&1 && ! docker_answers; then
    log "neither Docker nor bubblewrap is available: sandboxes cannot start here"
fi
exit 0
