#!/usr/bin/env bash
# Install everything the tests need and run the whole suite: Rust checks and tests, the Python
# package with its test extras, lint, stub check, pytest (including benchmark correctness checks).
# This is the README's test command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says when it starts (seconds since the script began), so a slow phase shows.
stamp() { echo "== $* (at ${SECONDS} s)"; }

# Debian 12 and Raspberry Pi OS refuse pip installs into their own Python (PEP 668, "externally
# managed"). With such a python3 the suite installs into a virtual environment of its own,
# .venv, as the README's first command does; any other Python (a venv, pyenv) is used as it is.
system_python=0
if python3 -c 'import pathlib, sys, sysconfig
managed = pathlib.Path(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED").exists()
sys.exit(0 if managed and sys.prefix == sys.base_prefix else 1)'; then
  system_python=1
fi

# Independent IAX2 peers and decoders from Debian (tshark's IAX2 dissector, iaxmodem),
# PortAudio for the sounddevice backend (exercised on ALSA's null PCM), Chromium for the
# status-page tests (driven by Playwright from PyPI; Playwright's own browsers are never fetched),
# systemd's systemd-analyze/-sysusers/-tmpfiles that check the shipped unit
# (packaging/systemd), tmux, the real 80x24 terminal the `node tui` test types into, and
# espeak-ng and sox: the TTS binary the announcements are tested with, speech for DTMF talk-off,
# and an independent DTMF tone generator. wireguard-go and wireguard-tools (`wg`): another
# WireGuard implementation for the tunnel's interop test, and the reference for keys; without
# their recommends (which would pull in a kernel image).
missing=()
updated=0
# python3-venv: the README's first command, which tests/test_readme_install.py runs on Debian's
# own /usr/bin/python3, makes a venv; so does this script on such a python3.
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
  missing+=(python3-venv)
fi
if [ "$system_python" = 1 ]; then
  # Python.h, for the test extras that build C extensions (pesq).
  [ -e "$(python3 -c 'import sysconfig; print(sysconfig.get_path("include"))')/Python.h" ] ||
    missing+=(python3-dev)
fi
command -v tshark >/dev/null || missing+=(tshark)
command -v iaxmodem >/dev/null || missing+=(iaxmodem)
command -v chromium >/dev/null || missing+=(chromium)
command -v tmux >/dev/null || missing+=(tmux)
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v sox >/dev/null || missing+=(sox)
ls /usr/lib/*-linux-gnu/libportaudio.so.2 >/dev/null 2>&1 || missing+=(libportaudio2)
command -v systemd-analyze >/dev/null || missing+=(systemd)
# strace shows the order of a node's first I/O and kills it (SIGKILL) at the very call that puts
# a file in place (tests/test_files_whole.py, tests/radio/test_power_cut.py).
command -v strace >/dev/null || missing+=(strace)
# libfaketime moves a running node's wall clock, years forward and back (tests/test_clock_jump.py).
command -v faketime >/dev/null || missing+=(faketime)
# SvxLink, a real EchoLink station, headless (tests/echolink/); stdbuf line-buffers its log.
command -v svxlink >/dev/null || missing+=(svxlink-server)
# libgsm (the GSM 06.10 codec Asterisk and SvxLink use): the reference our Rust GSM codec must
# match bit for bit, and the peer of its bench (tests/test_gsm.py, benches/bench_gsm.py).
ls /usr/lib/*-linux-gnu/libgsm.so.1 >/dev/null 2>&1 || missing+=(libgsm1)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    stamp "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    updated=1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "== note: ${missing[*]} not installed and not root; tests that need them are skipped" >&2
  fi
fi

wg_missing=()
command -v wireguard-go >/dev/null || wg_missing+=(wireguard-go)
command -v wg >/dev/null || wg_missing+=(wireguard-tools)
if [ ${#wg_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    stamp "installing Debian packages: ${wg_missing[*]}"
    [ "$updated" = 1 ] || apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${wg_missing[@]}" >/dev/null
  else
    echo "== note: ${wg_missing[*]} not installed and not root; tests that need them are skipped" >&2
  fi
fi

if [ "$system_python" = 1 ]; then
  stamp "externally managed python3: a virtual environment, .venv"
  python3 -m venv .venv
  export VIRTUAL_ENV="$PWD/.venv"
  export PATH="$VIRTUAL_ENV/bin:$PATH"
fi

stamp "Python package (builds the Rust extension) with test extras"
python3 -m pip install -q --disable-pip-version-check -e '.[test]'

stamp "Rust: format, lint, tests"
cargo fmt --check
cargo clippy -q --all-targets -- -D warnings
cargo clippy -q --all-targets --features python -- -D warnings
cargo test -q

# Each cargo-fuzz target (fuzz/, its own workspace) for 10 s, seeded with its committed corpus:
# every committed input is replayed through its checks, then libFuzzer mutates from there.
# New inputs go to a scratch directory so the run leaves the tree untouched. cargo-fuzz needs a
# nightly toolchain; its install from crates.io takes about a minute. The targets are built
# once, then run two at a time (one per core).
stamp "Rust: fuzz targets, 10 s each"
cargo fmt --check --manifest-path fuzz/Cargo.toml
fuzz_one() {
  local target=$1 scratch=$2
  mkdir -p "$scratch/$target"
  local log="$scratch/$target.log"
  if ! (cd fuzz && cargo +nightly fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
    -max_total_time=10 -max_len=2048 -print_final_stats=1) >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz target $target failed; the input is under fuzz/artifacts/$target/" >&2
    return 1
  fi
  echo "$target: $(grep -m1 '^stat::number_of_executed_units' "$log" | tr -dc 0-9) executions"
}
if cargo +nightly --version >/dev/null 2>&1; then
  command -v cargo-fuzz >/dev/null || cargo install -q --locked cargo-fuzz
  scratch=$(mktemp -d)
  if ! (cd fuzz && cargo +nightly fuzz build -O) >"$scratch/build.log" 2>&1; then
    tail -n 60 "$scratch/build.log" >&2
    exit 1
  fi
  mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
  for ((i = 0; i < ${#targets[@]}; i += 2)); do
    pids=()
    for target in "${targets[@]:i:2}"; do
      fuzz_one "$target" "$scratch" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "$pid" || exit 1
    done
  done
  rm -rf "$scratch"
else
  echo "== note: no nightly Rust toolchain; fuzz targets not run" >&2
fi

stamp "Python: lint and stubs"
python3 -m ruff check python tests benches
python3 -m ruff format --check python tests benches
python3 -m mypy.stubtest node._core --allowlist .stubtest-allowlist

# pytest runs test files in parallel (pytest-xdist, `--dist loadgroup` with one group per file,
# so a module's fixtures and its order hold, and one group for the heavy files, which never run
# beside each other: tests/conftest.py). Most of the suite waits on real daemons, peers and
# timers rather than on the CPU, so more workers than cores pay.
#
# First everything but the third of the suite most sensitive to a busy host: the tests that run
# real daemons, real peers (iaxmodem, tshark, wireguard-go, ASL3) and real timers. That third
# then runs beside two CPU hogs, where a test must assert behaviour, never the host's speed
# (issue 21): the busy host is the harder condition, and each of its tests runs there.
LOADED_THIRD=(tests/interop tests/links tests/load tests/radio)
run_pytest() {
  set +e
  python3 -m pytest -q -p no:cacheprovider --dist loadgroup "$@"
  local rc=$?
  set -e
  if [ "$rc" = 5 ]; then
    echo "pytest collected no tests" >&2
    exit 1
  fi
  [ "$rc" = 0 ] || exit "$rc"
}

stamp "pytest"
ignored=()
for dir in "${LOADED_THIRD[@]}"; do ignored+=(--ignore="$dir"); done
run_pytest -n 2 tests benches --benchmark-disable "${ignored[@]}"

stamp "pytest under load: ${LOADED_THIRD[*]}"
hogs=()
for _ in 1 2; do
  yes >/dev/null &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
run_pytest -n 3 "${LOADED_THIRD[@]}"
kill "${hogs[@]}" 2>/dev/null || true
stamp "done"
