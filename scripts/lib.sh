# shellcheck shell=bash
# Helpers shared by scripts/setup, run, test, bench and .ci/run. Source it; don't run it.
#
# Everything here logs to stderr, never stdout: scripts/run hands stdout to
# bin/pagemux as the MCP stream, and a stray line there breaks the client.

# PAGEMUX_ROOT is the repository root, found from this file's own location so the
# scripts work from any directory and through a symlink.
PAGEMUX_ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
export PAGEMUX_ROOT

# chrome_candidates mirrors browser.ExecCandidates (browser/config.go); keep them in step.
chrome_candidates=(chromium chromium-browser google-chrome google-chrome-stable)

# log prints one line, prefixed with the calling script's name, to stderr.
log() {
	printf '%s: %s\n' "${PAGEMUX_SCRIPT:-$(basename "$0")}" "$*" >&2
}

# die logs its message and exits 1.
die() {
	log "error: $*"
	exit 1
}

# ensure_go puts Go on PATH, adding /usr/local/go/bin when `go` isn't found.
# It doesn't install Go: that's a toolchain download, which setup never does.
ensure_go() {
	command -v go >/dev/null 2>&1 && return 0
	if [[ -x /usr/local/go/bin/go ]]; then
		export PATH="/usr/local/go/bin:$PATH"
		return 0
	fi
	die "go not found on PATH nor at /usr/local/go/bin/go; install Go $(go_wanted) and put its bin/ on PATH"
}

# go_wanted prints the Go version go.mod asks for.
go_wanted() {
	sed -n 's/^go \([0-9.]*\).*/\1/p' "$PAGEMUX_ROOT/go.mod"
}

# find_chrome prints the Chrome binary the browser package would pick
# ($CHROME_PATH, else the first candidate on PATH) and fails if there is none.
find_chrome() {
	if [[ -n "${CHROME_PATH:-}" ]]; then
		[[ -x "$CHROME_PATH" ]] || return 1
		printf '%s\n' "$CHROME_PATH"
		return 0
	fi
	local name
	for name in "${chrome_candidates[@]}"; do
		if command -v "$name" 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

# find_headless_shell prints Chrome's headless shell (chromium-headless-shell,
# the old headless mode), which scripts/test runs most tests on, and fails if
# there is none. Debian's binary comes first: /usr/bin/chromium-headless-shell
# is a wrapper that runs it as its child, and a test that kills Chrome's
# process (a crash, for the relaunch) would kill the wrapper alone.
find_headless_shell() {
	local path
	for path in /usr/lib/chromium/chromium-headless-shell "$(command -v chromium-headless-shell 2>/dev/null)"; do
		if [[ -n "$path" && -x "$path" ]]; then
			printf '%s\n' "$path"
			return 0
		fi
	done
	return 1
}

# chrome_version prints what the Chrome binary says its version is. Debian's
# chromium wrapper may complain on stderr about /dev/shm; that isn't ours to show.
chrome_version() {
	"$1" --version 2>/dev/null || echo "unknown (\`$1 --version\` failed)"
}

# as_root runs a command as root: directly when we are root, through sudo when it
# exists, and fails with a clear message otherwise.
as_root() {
	if [[ "$(id -u)" -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root for: $*; run it as root, or install the package yourself"
	fi
}

# apt_install installs Debian packages non-interactively, updating the lists first
# (once per script run). Its output goes to stderr.
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* yourself"
	if [[ -z "${apt_updated:-}" ]]; then
		log "apt-get update"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >&2
		apt_updated=1
	fi
	log "apt-get install -y $*"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" </dev/null >&2
}

# ensure_etcd builds etcd 3.7.3 into bin/etcd unless it is there.
#
# The cluster tests run a real etcd. scripts/etcd is a module of its own, a
# three-line main on etcd's server, so that pagemux's module never depends on
# the server, and because `go install` refuses the server module for its
# replace directives. It is built with -race, like the tests: grpc, protobuf,
# x/net and etcd's client are then compiled once for both (scripts/etcd/go.mod
# pins them at pagemux's versions), as long as the build comes after theirs
# (scripts/test builds it after go vet: two go commands compiling a package
# at once both do the work). On an empty build cache that costs about
# 65 CPU-s after the tests' compile instead of 125 CPU-s for a plain build
# (-trimpath -ldflags=-s -w saves nothing); a race etcd spends about twice the
# CPU of a plain one at run time, 2-3 CPU-s over the cluster tests. Benchmarks
# of etcd's latency want a plain build (ensure_etcd_plain, bin/etcd-plain);
# PAGEMUX_ETCD=path names the etcd the tests run.
ensure_etcd() {
	build_etcd "$PAGEMUX_ROOT/bin/etcd" -race
}

# ensure_etcd_plain builds etcd 3.7.3 without -race into bin/etcd-plain
# unless it is there: half the CPU of the race build at run time, for
# scripts/cluster and the benchmarks. Its compile shares grpc, protobuf and
# etcd's client with the plain bin/pagemux build, so after that it costs
# about as much as the race build does after the tests'.
ensure_etcd_plain() {
	build_etcd "$PAGEMUX_ROOT/bin/etcd-plain"
}

# build_etcd BIN [go build flags]: build scripts/etcd into BIN unless BIN is
# etcd 3.7.3 already.
build_etcd() {
	local etcd_version=3.7.3 etcd_bin="$1" etcd_have
	shift
	etcd_have="$("$etcd_bin" --version 2>/dev/null | sed -n 's/^etcd Version: //p' || true)"
	if [[ "$etcd_have" == "$etcd_version" ]]; then
		[[ -n "${quiet:-}" ]] || log "etcd: $etcd_bin ($etcd_version)"
	else
		log "etcd: building $etcd_version into $etcd_bin (was: ${etcd_have:-missing}); from scripts/etcd${1:+ with $*}, a minute or two on a cold build cache"
		mkdir -p "$(dirname "$etcd_bin")"
		(cd "$PAGEMUX_ROOT/scripts/etcd" && go build "$@" -o "$etcd_bin.tmp" .)
		mv "$etcd_bin.tmp" "$etcd_bin"
		etcd_have="$("$etcd_bin" --version | sed -n 's/^etcd Version: //p')"
		[[ "$etcd_have" == "$etcd_version" ]] || die "built $etcd_bin, but it says version ${etcd_have:-unknown}, not $etcd_version; check scripts/etcd/go.mod"
		log "etcd: $etcd_bin ($etcd_version)"
	fi
}
