#!/usr/bin/env python3
"""Joins the parts in src/ into the shipped files devtensor.h and devtensor_cuda.cu.

src/MANIFEST names each output ("[devtensor.h]") and, under it, its parts in order. The
first part is copied as written (it opens the file with how to use it); every later part
follows one banner line, "/* ---- src/PATH ---- */", so a reader of the shipped file can
find the part it came from. Python 3's standard library only.

    python3 tools/amalgamate.py            write the outputs
    python3 tools/amalgamate.py --check    exit 1 when a committed output differs
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
MAX_LINES = 2000  # a part longer than this is split


def fail(msg):
    sys.stderr.write("amalgamate: " + msg + "\n")
    sys.exit(2)


def read_manifest():
    outputs, cur = [], None
    with open(os.path.join(SRC, "MANIFEST"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                cur = (line[1:-1], [])
                outputs.append(cur)
            elif cur is None:
                fail("src/MANIFEST:%d: a part before any [output]" % n)
            else:
                cur[1].append(line)
    return outputs


def check_parts(outputs):
    listed = [p for _, parts in outputs for p in parts]
    seen = set()
    for p in listed:
        if p in seen:
            fail("src/%s is listed twice in src/MANIFEST" % p)
        seen.add(p)
    on_disk = set()
    for d, _, files in os.walk(SRC):
        for name in files:
            rel = os.path.relpath(os.path.join(d, name), SRC).replace(os.sep, "/")
            if rel != "MANIFEST":
                on_disk.add(rel)
    for p in sorted(on_disk - seen):
        fail("src/%s is not in src/MANIFEST" % p)
    for p in sorted(seen - on_disk):
        fail("src/MANIFEST names src/%s, which does not exist" % p)


def join(parts):
    chunks = []
    for i, p in enumerate(parts):
        with open(os.path.join(SRC, p), encoding="utf-8", newline="") as f:
            text = f.read()
        if "\r" in text:
            fail("src/%s has CR line endings" % p)
        if not text.endswith("\n"):
            fail("src/%s does not end with a newline" % p)
        if text.count("\n") > MAX_LINES:
            fail("src/%s has %d lines (at most %d: split it)" % (p, text.count("\n"), MAX_LINES))
        chunks.append(text if i == 0 else "/* ---- src/%s ---- */\n%s" % (p, text))
    return "\n".join(chunks)


def main(argv):
    check = "--check" in argv[1:]
    outputs = read_manifest()
    check_parts(outputs)
    differ = []
    for name, parts in outputs:
        text = join(parts)
        path = os.path.join(ROOT, name)
        if check:
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    old = f.read()
            except OSError:
                old = None
            if old != text:
                differ.append(name)
        else:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
    if differ:
        sys.stderr.write("amalgamate: %s: not what src/ makes: edit src/, then run make amalgamate "
                         "and commit the result\n" % " and ".join(differ))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
