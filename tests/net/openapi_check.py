#!/usr/bin/env python3
"""Structural check of docs/openapi.yaml against the server's route table.

Usage: openapi_check.py REPO_ROOT. Fails (exit 1, naming the problem) when the document is not
OpenAPI 3.0 YAML, a $ref does not resolve, an operation lacks an operationId (or repeats one) or
responses, a path template's parameter is not declared, or a route of net/src/http_handler.cc's
table (or /v1/apply, /healthz, /readyz, /metrics, /v1/admin/backup) is missing from the document.
"""
import re
import sys

import yaml

root = sys.argv[1]
doc = yaml.safe_load(open(f"{root}/docs/openapi.yaml", encoding="utf-8"))
problems = []

if not str(doc.get("openapi", "")).startswith("3.0"):
    problems.append(f"openapi is {doc.get('openapi')!r}, not 3.0.x")
for key in ("info", "paths", "components"):
    if key not in doc:
        problems.append(f"no top-level {key}")


def resolve(ref):
    node = doc
    for part in ref.lstrip("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def walk(node, where):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if ref is not None and resolve(ref) is None:
            problems.append(f"{where}: $ref {ref} does not resolve")
        for k, v in node.items():
            walk(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk(v, f"{where}[{i}]")


walk(doc, "#")

ids = set()
methods_by_path = {}
for path, item in doc.get("paths", {}).items():
    templated = set(re.findall(r"{(\w+)}", path))
    for method, op in item.items():
        methods_by_path.setdefault(path, set()).add(method.upper())
        where = f"{method.upper()} {path}"
        op_id = op.get("operationId")
        if not op_id:
            problems.append(f"{where}: no operationId")
        elif op_id in ids:
            problems.append(f"{where}: operationId {op_id} repeated")
        ids.add(op_id)
        if not op.get("responses"):
            problems.append(f"{where}: no responses")
        declared = set()
        for p in op.get("parameters", []):
            p = resolve(p["$ref"]) if "$ref" in p else p
            if p and p.get("in") == "path":
                declared.add(p["name"])
        if declared != templated:
            problems.append(f"{where}: path parameters {sorted(declared)} != {sorted(templated)}")

# Every route the server answers is documented.
handler = open(f"{root}/net/src/http_handler.cc", encoding="utf-8").read()
routes = re.findall(r'\{http::verb::(\w+), "(\w+)", (true|false), "(\w*)", "([\w-]+)"\}', handler)
if len(routes) < 10:
    problems.append(f"found only {len(routes)} routes in http_handler.cc: is the table's form changed?")
expected = {("/v1/apply", "POST"), ("/healthz", "GET"), ("/readyz", "GET"), ("/metrics", "GET"),
            ("/v1/admin/backup", "POST")}
for verb, collection, keyed, action, _op in routes:
    key = "{token}" if collection == "tokens" else "{key}"
    path = f"/v1/{collection}/{{ns}}" + (f"/{key}" if keyed == "true" else "")
    if action:
        path += f":{action}"
    expected.add((path, verb.rstrip("_").upper()))
for path, method in sorted(expected):
    if method not in methods_by_path.get(path, set()):
        problems.append(f"{method} {path}: served but not in docs/openapi.yaml")

for p in problems:
    print(f"openapi_check: {p}", file=sys.stderr)
print(f"openapi_check: {len(doc.get('paths', {}))} paths, {len(ids)} operations, "
      f"{len(routes)} handler routes, {len(problems)} problems")
sys.exit(1 if problems else 0)
