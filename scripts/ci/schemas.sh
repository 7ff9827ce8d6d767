#!/usr/bin/env bash
# Installs the tools the export-schema test uses (crates/dyno/tests/cli/cluster_faults.rs,
# every_rendering_passes_kubeconform_strict_and_an_unknown_field_fails):
# - kubeconform v0.6.7 (Apache-2.0), which validates the Kubernetes manifests and the Chaos
#   Mesh Workflow against the schemas kept in schemas/ (offline);
# - hclcheck (scripts/ci/hclcheck, dyno's own, on HashiCorp's HCL 2 parser, MPL-2.0),
#   which parses the Nomad job files.
# Both go to ${XDG_CACHE_HOME:-~/.cache}/dyno/tools (DYNO_TOOLS_DIR to move it), where
# the test looks; built with Go from the module proxy, about a minute of both cores the
# first time, nothing afterwards. Never fails the caller: without Go (or the proxy) it
# says so and the test skips those checks with a printed note.
# Usage: scripts/ci/schemas.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
DIR=${DYNO_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/dyno/tools}
KUBECONFORM=v0.6.7
if ! command -v go >/dev/null 2>&1; then
  echo "note: Go is not installed; kubeconform and hclcheck are not built and the export-schema checks skip"
  exit 0
fi
mkdir -p "$DIR/kubeconform-$KUBECONFORM"
start=$(date +%s)
if [ ! -x "$DIR/kubeconform-$KUBECONFORM/kubeconform" ]; then
  if GOBIN="$DIR/kubeconform-$KUBECONFORM" nice -n 10 go install \
      "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM"; then
    echo "kubeconform $KUBECONFORM installed in $(( $(date +%s) - start )) s"
  else
    echo "note: kubeconform $KUBECONFORM could not be installed; the Kubernetes and Chaos Mesh schema checks skip"
  fi
else
  echo "kubeconform $KUBECONFORM: $DIR/kubeconform-$KUBECONFORM/kubeconform"
fi
src=scripts/ci/hclcheck
if [ ! -x "$DIR/hclcheck" ] || [ -n "$(find "$src" -newer "$DIR/hclcheck" -type f)" ]; then
  if (cd "$src" && nice -n 10 go build -o "$DIR/hclcheck" .); then
    echo "hclcheck built: $DIR/hclcheck"
  else
    echo "note: hclcheck could not be built; the Nomad job files are not parsed"
  fi
else
  echo "hclcheck: $DIR/hclcheck"
fi
exit 0
