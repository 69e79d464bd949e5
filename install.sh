#!/bin/sh
# Installs qm (quartermaster) from a release, checked against the release's SHA256SUMS:
#
#   curl -fsSL https://github.com/quartermaster-dev/quartermaster/releases/latest/download/install.sh | sh
#
# Environment (all optional):
#   QM_INSTALL_DIR       where qm goes; default ~/.local/bin, created if missing
#   QM_VERSION           a release to install, e.g. 0.2.0; default the latest
#   QM_INSTALL_BASE      the URL of the folder that holds the archives and SHA256SUMS (a mirror,
#                        or a local `npm run release` folder served over HTTP); overrides QM_VERSION
#   QM_INSTALL_PLATFORM  OS-ARCH to install instead of this machine's: linux-x64,
#                        linux-x64-baseline (x64 CPUs without AVX2), linux-arm64, darwin-arm64,
#                        darwin-x64
#
# Nothing is installed unless the archive's SHA-256 matches its line in SHA256SUMS. The example
# config goes to ~/.config/quartermaster/quartermaster.toml unless a file is there already.
# POSIX sh: runs under dash, bash, busybox ash and macOS's sh. Everything is inside main(), so a
# download cut short runs nothing.

set -eu

# The repository whose releases this script installs from (the release workflow writes its own).
QM_REPO=quartermaster-dev/quartermaster

say() { printf '%s\n' "$*"; }
fail() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}
has() { command -v "$1" >/dev/null 2>&1; }

# This machine as the archives name it: OS-ARCH, with x64-baseline for x64 CPUs without AVX2.
detect_platform() {
  os=$(uname -s)
  arch=$(uname -m)
  case $os in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) os=$(printf '%s' "$os" | tr '[:upper:]' '[:lower:]') ;;
  esac
  case $arch in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
  esac
  # A shell under Rosetta 2 reports x86_64 on an Apple Silicon Mac: install the native build.
  if [ "$os-$arch" = darwin-x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
    arch=arm64
  fi
  if [ "$arch" = x64 ]; then
    if [ "$os" = linux ]; then
      grep -Eq '^flags.*[[:space:]]avx2([[:space:]]|$)' /proc/cpuinfo 2>/dev/null || arch=x64-baseline
    elif [ "$os" = darwin ]; then
      sysctl -n machdep.cpu.leaf7_features 2>/dev/null | grep -qi avx2 || arch=x64-baseline
    fi
  fi
  printf '%s-%s\n' "$os" "$arch"
}

download() { # URL FILE
  if has curl; then
    curl -fsSL --retry 2 -o "$2" "$1" || fail "could not download $1"
  elif has wget; then
    wget -q -O "$2" "$1" || fail "could not download $1"
  else
    fail "needs curl or wget to download qm"
  fi
}

sha256_of() { # FILE
  if has sha256sum; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif has shasum; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    fail "needs sha256sum or shasum to verify the download; nothing installed"
  fi
}

main() {
  platform=${QM_INSTALL_PLATFORM:-$(detect_platform)}
  case $platform in
    *-*) ;;
    *) fail "QM_INSTALL_PLATFORM must be OS-ARCH (e.g. linux-x64), not '$platform'" ;;
  esac
  if [ -n "${QM_INSTALL_BASE:-}" ]; then
    base=$QM_INSTALL_BASE
  elif [ -n "${QM_VERSION:-}" ]; then
    base="https://github.com/$QM_REPO/releases/download/v${QM_VERSION#v}"
  else
    base="https://github.com/$QM_REPO/releases/latest/download"
  fi
  while [ "${base%/}" != "$base" ]; do base=${base%/}; done
  dir=${QM_INSTALL_DIR:-${HOME:?HOME is not set; set QM_INSTALL_DIR}/.local/bin}
  config_dir="${XDG_CONFIG_HOME:-$HOME/.config}/quartermaster"

  tmp=$(mktemp -d "${TMPDIR:-/tmp}/qm-install.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  download "$base/SHA256SUMS" "$tmp/SHA256SUMS"
  # sha256sum's format: HASH, two spaces (or space and '*'), FILE. Pick qm-VERSION-PLATFORM.tar.gz.
  awk -v suffix="-$platform.tar.gz" '{
    file = $2; sub(/^\*/, "", file)
    n = length(file); m = length(suffix)
    if (substr(file, 1, 3) == "qm-" && n > m + 3 && substr(file, n - m + 1) == suffix) print $1, file
  }' "$tmp/SHA256SUMS" >"$tmp/match"
  case $(wc -l <"$tmp/match" | tr -d ' ') in
    1) ;;
    0)
      there=$(awk '{ f = $2; sub(/^\*/, "", f); printf "%s%s", (NR > 1 ? ", " : ""), f }' "$tmp/SHA256SUMS")
      fail "no qm archive for $platform at $base (there: ${there:-none}); nothing installed"
      ;;
    *) fail "more than one archive for $platform in $base/SHA256SUMS; nothing installed" ;;
  esac
  read -r want file <"$tmp/match"
  case $want in
    *[!0-9a-f]*) fail "$base/SHA256SUMS has no valid SHA-256 for $file; nothing installed" ;;
  esac
  [ ${#want} -eq 64 ] || fail "$base/SHA256SUMS has no valid SHA-256 for $file; nothing installed"

  say "Downloading $base/$file"
  download "$base/$file" "$tmp/$file"
  got=$(sha256_of "$tmp/$file")
  [ "$got" = "$want" ] ||
    fail "SHA-256 mismatch for $file: SHA256SUMS says $want, the download is $got; nothing installed"
  say "Verified SHA-256 $got"

  stem=${file%.tar.gz}
  mkdir "$tmp/x"
  tar -xzf "$tmp/$file" -C "$tmp/x" || fail "could not unpack $file; nothing installed"
  [ -f "$tmp/x/$stem/qm" ] || fail "$file holds no $stem/qm; nothing installed"

  mkdir -p "$dir" || fail "could not create $dir"
  # Copy beside the target, then rename over it: a running qm keeps its old file.
  cp "$tmp/x/$stem/qm" "$dir/.qm.install.$$"
  chmod 755 "$dir/.qm.install.$$"
  mv -f "$dir/.qm.install.$$" "$dir/qm"
  say "Installed ${stem%-"$platform"} ($platform) to $dir/qm"

  config="$config_dir/quartermaster.toml"
  if [ ! -e "$config" ] && [ -f "$tmp/x/$stem/quartermaster.toml" ]; then
    mkdir -p "$config_dir" && cp "$tmp/x/$stem/quartermaster.toml" "$config" &&
      say "Wrote the example config (demo models, runs anywhere) to $config"
  fi

  qm="$dir/qm"
  case ":${PATH:-}:" in
    *":$dir:"*) qm=qm ;;
    *) say "$dir is not on your PATH; add it: export PATH=\"$dir:\$PATH\"" ;;
  esac
  say ""
  say "Next:"
  say "  $qm doctor -c $config"
  say "  $qm serve -c $config"
}

main "$@"
