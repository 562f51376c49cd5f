#!/usr/bin/env bash
# A Python 3.11 base image made from Debian bookworm's own packages, for a machine that
# reaches Debian's package mirrors but no container registry (so `python:3.11-slim` cannot
# be pulled). The citebot image builds on it like on the official image:
#
#   sudo deploy/base-image.sh                                   # -> localhost/citebot-base:bookworm
#   deploy/smoke.sh                                             # finds it when the default cannot be pulled
#   buildah bud -f deploy/Dockerfile --build-arg PYTHON_IMAGE=localhost/citebot-base:bookworm -t citebot:0.1.0 .
#
# Usage: deploy/base-image.sh [NAME:TAG]      (default localhost/citebot-base:bookworm)
#
# What it does: debootstrap (installed with apt-get when missing) makes a minimal bookworm
# root file system with python3 (3.11), python3-venv, python3-pip and ca-certificates,
# brings it up to date from the same Debian sources as this machine (with the security
# suite when this machine has it), adds the certificate authorities this machine trusts
# locally (/usr/local/share/ca-certificates: a TLS-inspecting proxy's CA, so that pip can
# reach PyPI during the build), and imports it as an image with buildah, podman or docker,
# whichever is there. Needs root (debootstrap chroots) and about 500 MB in $TMPDIR while
# it runs.
#
# Environment:
#   DEBIAN_MIRROR        the mirror debootstrap uses (default: debootstrap's own default)
#   BASE_IMAGE_BUILDER   buildah | podman | docker (default: the first one installed)
#   STORAGE_DRIVER       passed on to buildah/podman (vfs where overlay is not available)
#   LOCAL_CAS=no         leave this machine's local certificate authorities out
set -euo pipefail

name=${1:-localhost/citebot-base:bookworm}
suite=bookworm
packages=python3,python3-venv,python3-pip,ca-certificates

say() { printf 'base-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "debootstrap needs root; run it with sudo"

builder=${BASE_IMAGE_BUILDER:-}
if [ -z "$builder" ]; then
  for candidate in buildah podman docker; do
    if command -v "$candidate" >/dev/null 2>&1; then builder=$candidate; break; fi
  done
fi
[ -n "$builder" ] || die "no buildah, podman or docker here to import the image with"
storage=()
if [ -n "${STORAGE_DRIVER:-}" ] && [ "$builder" != docker ]; then storage=(--storage-driver "$STORAGE_DRIVER"); fi

if ! command -v debootstrap >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "debootstrap is not installed and there is no apt-get to install it"
  say "installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/citebot-base.XXXXXX")
rootfs=$work/rootfs
cleanup() {
  # Bind mounts made for the chroot first, then the tree.
  for mnt in proc sys dev; do
    if mountpoint -q "$rootfs/$mnt" 2>/dev/null; then umount -l "$rootfs/$mnt" || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

started=$(date +%s)
say "debootstrap $suite ($packages) into $rootfs"
# shellcheck disable=SC2086 # DEBIAN_MIRROR is one word or nothing
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" ${DEBIAN_MIRROR:-} >"$work/debootstrap.log" 2>&1 \
  || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }

# Point apt inside the image at this machine's Debian sources (mirror, updates and
# security suites) when they are for the same release, and install what they fix.
if grep -qs "VERSION_CODENAME=$suite" /etc/os-release; then
  rm -f "$rootfs/etc/apt/sources.list"
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$rootfs/etc/apt/sources.list"
  for file in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    # Only Debian's own sources: the keyrings of any other are not in the image.
    if grep -Eq 'debian-archive-keyring|/debian(-security)?([[:space:]]|$)' "$file"; then
      cp "$file" "$rootfs/etc/apt/sources.list.d/"
    fi
  done
  mount --bind /proc "$rootfs/proc"
  say "installing Debian's updates for $suite"
  chroot "$rootfs" /bin/sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -qq' \
    >"$work/upgrade.log" 2>&1 || { tail -n 30 "$work/upgrade.log" >&2; die "apt-get upgrade in the image failed"; }
  umount -l "$rootfs/proc"
fi

cas=(/usr/local/share/ca-certificates/*.crt)
if [ "${LOCAL_CAS:-yes}" != no ] && [ -e "${cas[0]}" ]; then
  say "adding ${#cas[@]} local certificate authorities: ${cas[*]##*/}"
  cp "${cas[@]}" "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the image"
fi

# Smaller, and nothing else of this machine's in the image.
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/tmp/*
: >"$rootfs/etc/resolv.conf"
printf '%s\n' citebot-base >"$rootfs/etc/hostname"

version=$(chroot "$rootfs" python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
say "python $version; importing as $name with $builder"
tar -C "$rootfs" --numeric-owner -cf "$work/rootfs.tar" .

path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
case "$builder" in
  buildah)
    ctr=$(buildah "${storage[@]}" from scratch)
    buildah "${storage[@]}" add "$ctr" "$work/rootfs.tar" / >/dev/null
    buildah "${storage[@]}" config --env "PATH=$path" --env LANG=C.UTF-8 --cmd python3 \
      --label org.opencontainers.image.description="Debian $suite with python3 $version, python3-venv and pip" \
      "$ctr"
    buildah "${storage[@]}" commit --quiet --rm "$ctr" "$name" >/dev/null
    ;;
  podman)
    podman "${storage[@]}" import --change "ENV PATH=$path" --change "ENV LANG=C.UTF-8" --change 'CMD ["python3"]' \
      "$work/rootfs.tar" "$name" >/dev/null
    ;;
  docker)
    docker import --change "ENV PATH=$path" --change "ENV LANG=C.UTF-8" --change 'CMD ["python3"]' \
      "$work/rootfs.tar" "$name" >/dev/null
    ;;
  *)
    die "BASE_IMAGE_BUILDER must be buildah, podman or docker (got '$builder')"
    ;;
esac
say "built $name in $(( $(date +%s) - started )) s"
