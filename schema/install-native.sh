#!/usr/bin/env bash
# Installs the production database engine locally: PostgreSQL 15 (Debian bookworm) and
# pgvector 0.8 built from Debian's own source package (trixie's deb-src, fetched through a
# private apt configuration so the system's sources stay untouched). Idempotent; needs root.
set -euo pipefail

PG_MAJOR=15
PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
say() { echo "db:install-native: $*"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "db:install-native: must run as root (it installs Debian packages)" >&2
  exit 1
fi

have_pkgs() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 1
  done
}
PKGS=(postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR build-essential dpkg-dev)
if have_pkgs "${PKGS[@]}"; then
  say "PostgreSQL $PG_MAJOR server and headers already installed"
else
  say "installing ${PKGS[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null
fi

EXT_DIR="$($PG_CONFIG --sharedir)/extension"
if ls "$EXT_DIR"/vector--0.8*.sql >/dev/null 2>&1 && [ -f "$($PG_CONFIG --pkglibdir)/vector.so" ]; then
  say "pgvector already installed: $(grep default_version "$EXT_DIR/vector.control")"
  exit 0
fi

# The archive's address comes from this machine's own apt sources (deb822 or one-line style).
MIRROR="$( (grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}';
            grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}') |
          grep -v security | grep -m1 -i debian || true)"
if [ -z "$MIRROR" ]; then
  echo "db:install-native: no Debian archive found in /etc/apt sources" >&2
  exit 1
fi
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/src"
cat >"$WORK/sources.list" <<SRC
deb-src [signed-by=$KEYRING] $MIRROR trixie main
SRC
APT=(-o "Dir::Etc::SourceList=$WORK/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
     -o "Dir::State::Lists=$WORK/lists" -o "Dir::Cache=$WORK/cache" -o "APT::Sandbox::User=root")
say "fetching pgvector's source package from $MIRROR (trixie)"
apt-get "${APT[@]}" update -qq
(cd "$WORK/src" && apt-get "${APT[@]}" source -qq pgvector >/dev/null)
SRC_DIR="$(find "$WORK/src" -maxdepth 1 -mindepth 1 -type d -name 'pgvector-*' | head -1)"
VERSION="${SRC_DIR##*/pgvector-}"
case "$VERSION" in 0.8*) ;; *) echo "db:install-native: expected pgvector 0.8, got $VERSION" >&2; exit 1 ;; esac
say "building pgvector $VERSION for PostgreSQL $PG_MAJOR"
# OPTFLAGS='' : portable build (no -march=native), as Debian builds it.
make -s -C "$SRC_DIR" PG_CONFIG="$PG_CONFIG" OPTFLAGS='' >/dev/null
make -s -C "$SRC_DIR" PG_CONFIG="$PG_CONFIG" OPTFLAGS='' install >/dev/null
say "installed pgvector $VERSION into $EXT_DIR"
