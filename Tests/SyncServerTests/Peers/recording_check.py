#!/usr/bin/env python3
"""Checks a recording file against Protocol/schemas (recording-header, recording-event and the
messages they refer to) with the jsonschema package, written from Protocol/RECORDING.md alone.
usage: recording_check.py FILE   Prints "ok N events"; exits 1 naming the first line that fails."""
import json, pathlib, sys

import jsonschema
from referencing import Registry, Resource

SCHEMAS = pathlib.Path(__file__).resolve().parents[3] / "Protocol" / "schemas"
resources = []
for path in SCHEMAS.glob("*.schema.json"):
    schema = json.loads(path.read_text())
    resources.append((schema["$id"], Resource.from_contents(schema)))
registry = Registry().with_resources(resources)


def validator(name):
    schema = json.loads((SCHEMAS / name).read_text())
    return jsonschema.Draft202012Validator(schema, registry=registry)


header, event = validator("recording-header.schema.json"), validator("recording-event.schema.json")
lines = pathlib.Path(sys.argv[1]).read_text().splitlines()
last = 0
for number, line in enumerate(lines, 1):
    try:
        value = json.loads(line)
        (header if number == 1 else event).validate(value)
        if number > 1:
            assert value[0] >= last, f"time {value[0]} before {last}"
            last = value[0]
    except Exception as error:  # noqa: BLE001 - any failure names its line
        print(f"line {number}: {error}")
        sys.exit(1)
print(f"ok {len(lines) - 1} events")
