#!/usr/bin/env python3
"""Misbehaving query servers for the protocol and qsbench tests (real processes, real pipes).

    qs_testserver.py echo                 answer true to everything but map_doc, one fixed row to map_doc
    qs_testserver.py log N                like echo, with N ["log", ...] lines before every answer
    qs_testserver.py error                answer every map_doc with ["error", "bad_doc", "<_id>"]
    qs_testserver.py fatal                answer every map_doc with ["fatal", "oops", "<_id>"]
    qs_testserver.py garbage              answer every map_doc with a line that is not JSON
    qs_testserver.py hang                 never answer map_doc
    qs_testserver.py record FILE          like echo, appending every line received to FILE
    qs_testserver.py deaf                 never read stdin at all
    qs_testserver.py selfkill             SIGKILL itself on the first map_doc
    qs_testserver.py crash-after N -- CMD...   forward to the real server CMD; after N map_docs, print
                                               "boom after N docs" on stderr and exit 3
    qs_testserver.py wrong DOC_ID -- CMD...    forward to CMD, but change one value in DOC_ID's rows
    qs_testserver.py tee FILE -- CMD...        forward to CMD, appending every line received to FILE
"""

import json
import os
import signal
import subprocess
import sys


def lines():
    for line in sys.stdin.buffer:
        yield line


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def simple(mode, arg):
    if mode == "deaf":
        signal.pause()
    record = open(arg, "ab") if mode == "record" else None
    for line in lines():
        if record:
            record.write(line)
            record.flush()
        cmd = json.loads(line)
        if cmd[0] != "map_doc":
            out(True)
            continue
        doc_id = cmd[1].get("_id")
        if mode in ("echo", "record"):
            out([[[doc_id, 1]]])
        elif mode == "log":
            for i in range(int(arg)):
                out(["log", f"log {i} for {doc_id}"])
            out([[[doc_id, 1]]])
        elif mode == "error":
            out(["error", "bad_doc", doc_id])
        elif mode == "fatal":
            out(["fatal", "oops", doc_id])
        elif mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif mode == "hang":
            signal.pause()
        elif mode == "selfkill":
            os.kill(os.getpid(), signal.SIGKILL)


def _change(value):
    """A visibly different value of the same shape."""
    if isinstance(value, bool) or value is None:
        return "changed"
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "!"
    if isinstance(value, list):
        return [_change(value[0])] + value[1:] if value else ["changed"]
    if isinstance(value, dict):
        if not value:
            return {"changed": True}
        k = sorted(value)[0]
        return dict(value, **{k: _change(value[k])})
    return value


def wrapper(mode, arg, argv):
    real = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    maps = 0
    record = open(arg, "ab") if mode == "tee" else None
    for line in lines():
        if record:
            record.write(line)
            record.flush()
        cmd = json.loads(line)
        if cmd[0] == "map_doc":
            if mode == "crash-after" and maps >= int(arg):
                sys.stderr.write(f"boom after {maps} docs\n")
                sys.stderr.flush()
                real.kill()
                sys.exit(3)
            maps += 1
        real.stdin.write(line)
        real.stdin.flush()
        answer = real.stdout.readline()
        while answer.startswith(b'["log"'):  # pass log lines through; the answer follows
            sys.stdout.buffer.write(answer)
            answer = real.stdout.readline()
        if mode == "wrong" and cmd[0] == "map_doc" and cmd[1].get("_id") == arg:
            rows = json.loads(answer)
            if rows and rows[0]:
                key, value = rows[0][0]
                rows[0][0] = [key, _change(value)]
            else:
                rows = [[[arg, "extra row"]]]
            answer = (json.dumps(rows) + "\n").encode()
        sys.stdout.buffer.write(answer)
        sys.stdout.flush()


def main():
    args = sys.argv[1:]
    mode = args[0]
    arg = args[1] if len(args) > 1 and args[1] != "--" else None
    if "--" in args:
        wrapper(mode, arg, args[args.index("--") + 1:])
    else:
        simple(mode, arg)


if __name__ == "__main__":
    main()
