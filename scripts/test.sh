#!/usr/bin/env bash
# Installs everything the tests need and runs every test: the format and lint gates, the
# Rust unit and integration tests, and the interop suites with the real clients
# (hdfs-native from PyPI, Hadoop 3.4.1's FsShell and NameNode from Maven Central).
# Safe to re-run; downloads are cached in .venv, ~/.m2 and ~/.cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

need() {  # need COMMAND DEBIAN-PACKAGE
  if ! command -v "$1" >/dev/null 2>&1; then
    step "installing $2 (for $1)"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    # Non-interactive: krb5-config would otherwise ask for a default realm.
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"
  fi
}
need java openjdk-17-jdk-headless
need mvn maven
need python3 python3-venv
# The web UI's browser test drives Debian's Chromium through its ChromeDriver.
need chromium chromium
# The WebHDFS suite runs the Hadoop guide's curl commands.
need curl curl
need chromedriver chromium-driver
# Secure-mode tests start a throw-away MIT KDC of their own.
need kdb5_util krb5-kdc
need kadmin.local krb5-admin-server
need kinit krb5-user
command -v cargo >/dev/null || { echo "cargo (rustup) is required" >&2; exit 1; }
# On CI, a clean clone builds once: incremental caches and debug info would only fill the
# disk (4.3 GB against 1.3 GB without them, enough to fill a small CI disk mid-link).
# Panics still name their file and line without debug info.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=0; fi
# The gates need rustfmt and clippy; a minimal rustup profile lacks them.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  step "installing rustfmt and clippy"
  rustup component add rustfmt clippy
fi

# What the tree looks like before the tests: a test that leaves a file in it fails the run
# (its servers and tools work in temporary directories). Set-up's own outputs (.venv,
# target/) are ignored by .gitignore.
in_git() { git rev-parse --is-inside-work-tree >/dev/null 2>&1; }
tree_before=""
if in_git; then tree_before=$(git status --porcelain --untracked-files=all); fi

step "python venv with pinned clients"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r tests/interop/requirements.txt

step "Hadoop 3.4.1 client and NameNode jars"
(cd tests/interop/java && mvn -B -q package -DskipTests)

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace

step "build ferrite for the interop suites"
cargo build -p ferrite

step "interop: hdfs-native and Hadoop FsShell against ferrite (and a real HDFS NameNode)"
.venv/bin/pytest -q tests/interop/python

if in_git; then
  step "no test left a file in the repository"
  tree_after=$(git status --porcelain --untracked-files=all)
  if [ "$tree_after" != "$tree_before" ]; then
    diff <(printf '%s\n' "$tree_before") <(printf '%s\n' "$tree_after") >&2 || true
    echo "the tests changed or left the files above in the repository" >&2
    exit 1
  fi
fi
