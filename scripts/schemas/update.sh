#!/usr/bin/env bash
# Regenerates the JSON schemas under schemas/ that the kubeconform test validates dyno's
# Kubernetes and Chaos Mesh renderings against (schemas/README.md: sources, versions,
# licences, conversion). Checks each input's SHA-256 against the one recorded here, so a
# re-run converts exactly the pinned files.
#
# usage: scripts/schemas/update.sh CHAOS_MESH_CRD_YAML
#   CHAOS_MESH_CRD_YAML: manifests/crd.yaml of Chaos Mesh at v2.7.3, e.g.
#     git clone https://github.com/chaos-mesh/chaos-mesh && git -C chaos-mesh show v2.7.3:manifests/crd.yaml > crd.yaml
# needs: go (the Kubernetes OpenAPI spec comes from the Go module proxy), python3 with
# PyYAML.
set -euo pipefail
cd "$(dirname "$0")/../.."
K8S_VERSION=v1.32.4
K8S_SHA256=2335b4e7f79df85b20066164b14d8f02dd077dee7cd8c7b7fb425009c9837e85
CHAOS_VERSION=v2.7.3
CHAOS_SHA256=525b208362a1b5dddf14b1cde951d5802c25c981e0abc542ee2e86766b5ed63f
[ $# -eq 1 ] && [ -r "$1" ] || { sed -n '2,12p' "$0" >&2; exit 2; }
check() { # FILE SHA256 WHAT
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    [ "$got" = "$2" ] || { echo "update.sh: $3 $1 has SHA-256 $got, not the pinned $2" >&2; exit 2; }
}
dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
swagger="$dir/api/openapi-spec/swagger.json"
check "$swagger" "$K8S_SHA256" "Kubernetes $K8S_VERSION OpenAPI spec"
check "$1" "$CHAOS_SHA256" "Chaos Mesh $CHAOS_VERSION CRDs"
rm -rf "schemas/kubernetes-$K8S_VERSION" "schemas/chaos-mesh-$CHAOS_VERSION"
python3 scripts/schemas/convert.py kubernetes "$swagger" "schemas/kubernetes-$K8S_VERSION" \
    io.k8s.api.core.v1.ConfigMap io.k8s.api.core.v1.Service io.k8s.api.apps.v1.StatefulSet
python3 scripts/schemas/convert.py crd "$1" "schemas/chaos-mesh-$CHAOS_VERSION" Workflow
