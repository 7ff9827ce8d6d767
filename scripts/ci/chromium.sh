#!/usr/bin/env bash
# Installs headless Chromium for the browser test of `dyno serve`
# (crates/dyno/tests/serve_browser.rs), which loads the main pages, checks the console and
# saves screenshots under target/web-screenshots/.
# Never fails the caller: where Chromium cannot be installed, it says so and the test
# skips with a printed note.
# Usage: scripts/ci/chromium.sh
set -uo pipefail

find_browser() {
  command -v chromium || command -v chromium-browser || command -v google-chrome
}

if browser=$(find_browser); then
  echo "Chromium: $("$browser" --version 2>/dev/null || echo "$browser")"
  exit 0
fi

if command -v apt-get >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
  if [ ! -f /tmp/.dyno-apt-updated ]; then
    $sudo apt-get update -qq >/dev/null 2>&1 && touch /tmp/.dyno-apt-updated
  fi
  # Debian's chromium runs headless without a display; a font for the pictures' text.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core >/dev/null 2>&1
fi

if browser=$(find_browser); then
  echo "Chromium installed: $("$browser" --version 2>/dev/null || echo "$browser")"
else
  echo "note: Chromium could not be installed; the browser test of dyno serve will skip with a note"
fi
exit 0
