#!/usr/bin/env python3
"""Converts OpenAPI schemas into the standalone, strict JSON schemas kubeconform reads
(schemas/README.md says where each input comes from and why this conversion).

  convert.py kubernetes SWAGGER_JSON OUT_DIR DEFINITION...   # e.g. io.k8s.api.apps.v1.StatefulSet
  convert.py crd CRD_YAML OUT_DIR KIND...                    # e.g. Workflow

Each output file is named as kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}.json`
template expects it (`statefulset-apps-v1.json`, `configmap-v1.json`,
`workflow-chaos-mesh-v1alpha1.json`), and is:
- standalone: every `$ref` inlined, so no other file is needed;
- strict: every object schema that lists its properties refuses any other property
  (`additionalProperties: false`), except where the API marks a field as free-form
  (`x-kubernetes-preserve-unknown-fields`), so a field the API does not know fails;
- int-or-string fields accept an integer or a string, as the API server does;
- `apiVersion` and `kind` are pinned to the kind's own values.
The output is deterministic (sorted keys), so a re-run shows only real changes.
"""
import json
import sys
from pathlib import Path

INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}


def kind_suffix(api_version):
    """kubeconform's KindSuffix: -<first label of the group>-<version>, or -<version>."""
    parts = api_version.split("/")
    suffix = "-" + parts[0].split(".")[0].lower()
    if len(parts) > 1:
        suffix += "-" + parts[1].lower()
    return suffix


def strict(node):
    """Refuses unknown properties on every object schema that lists its properties."""
    if isinstance(node, list):
        return [strict(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()}
    if out.get("x-kubernetes-int-or-string") or out.get("format") == "int-or-string":
        keep = {k: v for k, v in out.items() if k in ("description",)}
        return {**keep, **INT_OR_STRING}
    free = out.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in out and "additionalProperties" not in out and not free:
        out["additionalProperties"] = False
    return out


def pin(schema, api_version, kind):
    props = schema.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "enum": [api_version]}
    props["kind"] = {"type": "string", "enum": [kind]}
    return schema


def inline(node, definitions, stack=()):
    """Every $ref replaced by its definition; a definition that refers to itself is left
    open ({}) at the point of recursion (none of the kinds dyno renders has one)."""
    if isinstance(node, list):
        return [inline(x, definitions, stack) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if ref is not None:
        name = ref.rsplit("/", 1)[-1]
        if name in stack:
            return {}
        target = inline(definitions[name], definitions, stack + (name,))
        rest = {k: inline(v, definitions, stack) for k, v in node.items() if k != "$ref"}
        return {**target, **rest}
    return {k: inline(v, definitions, stack) for k, v in node.items()}


def write(out_dir, api_version, kind, schema):
    schema = {"$schema": "http://json-schema.org/schema#", **schema}
    path = Path(out_dir) / f"{kind.lower()}{kind_suffix(api_version)}.json"
    path.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
    print(f"{path}: {kind} {api_version}")


def kubernetes(swagger_path, out_dir, names):
    definitions = json.loads(Path(swagger_path).read_text())["definitions"]
    for name in names:
        d = definitions[name]
        gvk = d["x-kubernetes-group-version-kind"][0]
        api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
        schema = strict(inline(d, definitions, (name,)))
        write(out_dir, api_version, gvk["kind"], pin(schema, api_version, gvk["kind"]))


def crd(crd_path, out_dir, kinds):
    import yaml  # PyYAML: only the CRD conversion needs it

    found = set()
    for doc in yaml.safe_load_all(Path(crd_path).read_text()):
        if not doc or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        kind = spec["names"]["kind"]
        if kind not in kinds:
            continue
        for version in spec["versions"]:
            api_version = f"{spec['group']}/{version['name']}"
            schema = strict(version["schema"]["openAPIV3Schema"])
            write(out_dir, api_version, kind, pin(schema, api_version, kind))
        found.add(kind)
    missing = set(kinds) - found
    if missing:
        sys.exit(f"convert.py: {crd_path} has no CustomResourceDefinition of {sorted(missing)}")


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] not in ("kubernetes", "crd"):
        sys.exit(__doc__)
    mode, source, out, *names = sys.argv[1:]
    Path(out).mkdir(parents=True, exist_ok=True)
    (kubernetes if mode == "kubernetes" else crd)(source, out, names)
