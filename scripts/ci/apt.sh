# Sourced by the install scripts beside it (not run on its own).
#
# apt_install [--with-recommends] PACKAGE...: installs Debian packages quietly, as root or
# through `sudo -n`, running `apt-get update` once per machine (the marker
# /tmp/.dyno-apt-updated). Returns non-zero where apt-get is missing or the install
# failed; the callers then say so in a note and never fail CI.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo="" recommends="--no-install-recommends"
  [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
  if [ "${1:-}" = --with-recommends ]; then
    recommends=""
    shift
  fi
  if [ ! -f /tmp/.dyno-apt-updated ]; then
    $sudo apt-get update -qq >/dev/null 2>&1 && touch /tmp/.dyno-apt-updated
  fi
  # shellcheck disable=SC2086 # $recommends is one option or none
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $recommends "$@" >/dev/null 2>&1
}
