"""Validates an OpenAPI document with schemathesis's validator (the OpenAPI meta-schema of
the document's version), checks that every local `$ref` resolves, and loads each of its
operations, so that a parameter schemathesis cannot read fails too.

Usage: python validate.py <file.json>; prints "valid: N operations" or exits 1 naming the
problem.
"""

import json
import sys

import schemathesis


def references(value):
    """Every `$ref` under `value`."""
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            yield value["$ref"]
        for item in value.values():
            yield from references(item)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)


def resolves(raw, target):
    """Whether the local reference `target` (`#/a/b`) names something in `raw`."""
    if not target.startswith("#/"):
        return False
    node = raw
    for part in target[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def main():
    with open(sys.argv[1], encoding="utf-8") as file:
        raw = json.load(file)
    schema = schemathesis.openapi.from_dict(raw)
    schema.validate()
    dangling = sorted({target for target in references(raw) if not resolves(raw, target)})
    if dangling:
        print(f"references that do not resolve: {dangling}", file=sys.stderr)
        sys.exit(1)
    count = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation is None:
            print(f"an operation does not load: {result.err()}", file=sys.stderr)
            sys.exit(1)
        count += 1
    print(f"valid: {count} operations")


if __name__ == "__main__":
    main()
