"""Reads an asciicast v2 file with asciinema's own reader (the reference implementation, the
Python package in the tests' virtual environment) and prints what the test checks, as JSON:
the header's width, height and idle_time_limit, and each output event's time and data.
usage: cast_check.py FILE.cast"""
import json
import sys

from asciinema import asciicast

with asciicast.open_from_url(sys.argv[1]) as cast:
    header = cast.v2_header
    events = [[event[0], event[2]] for event in cast.events("o")]
print(json.dumps({"width": header["width"], "height": header["height"],
                  "idle_time_limit": header.get("idle_time_limit"), "events": events}))
