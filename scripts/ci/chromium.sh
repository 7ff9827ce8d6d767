#!/usr/bin/env bash
# Installs headless Chromium for the browser test of `dyno serve`
# (crates/dyno/tests/cli/serve_browser.rs), which loads the main pages, checks the console and
# saves screenshots under target/web-screenshots/.
# Never fails the caller: where Chromium cannot be installed, it says so and the test
# skips with a printed note.
# Usage: scripts/ci/chromium.sh
set -uo pipefail
. "$(dirname "$0")/apt.sh"

find_browser() {
  command -v chromium || command -v chromium-browser || command -v google-chrome
}

if browser=$(find_browser); then
  echo "Chromium: $("$browser" --version 2>/dev/null || echo "$browser")"
  exit 0
fi

# Debian's chromium runs headless without a display; a font for the pictures' text.
apt_install chromium fonts-dejavu-core

if browser=$(find_browser); then
  echo "Chromium installed: $("$browser" --version 2>/dev/null || echo "$browser")"
else
  echo "note: Chromium could not be installed; the browser test of dyno serve will skip with a note"
fi
exit 0
