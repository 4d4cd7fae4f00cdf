"""Readers for declaration sources, streamed so memory stays flat whatever the input size.

Every reader yields `(location, raw)` records:
- location: where the record starts, `file:line` (JSON lines, JSON arrays/streams) or the file path
  (dump directories), for messages and the rejects file;
- raw: a JSON line as bytes (JSON lines files; parsed later by whoever consumes it), an already parsed
  value (JSON arrays and dump files), or a `Malformed` saying why that input could not be read.

Supported sources (`open_source(path)`):
- JSON lines, `*.jsonl` / `*.ndjson` / anything not starting with `[` or `{` (optionally gzip-compressed);
- a JSON array file or a stream of concatenated JSON values (`*.json`, optionally gzip-compressed), parsed
  incrementally with `json.JSONDecoder.raw_decode` over chunks;
- a directory of one-declaration `*.json` / `*.json.gz` files (the NACP dump; each file either the bare
  declaration or the dump's wrapper `{"id": ..., "data": {...}}`), read in sorted path order, recursively.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

CHUNK_CHARS = 1 << 20
# Declarations are lines of ~15 KB: with the default 8 KB buffer every line took several reads and joins
# (4× the CPU of reading with a buffer that holds many lines).
READ_BUFFER = 1 << 20
# A single JSON value in an array stream larger than this is reported as malformed instead of buffered.
MAX_ELEMENT_CHARS = 256 << 20


@dataclass(frozen=True)
class Malformed:
    """Input that could not be read as JSON; `reason` says why."""

    reason: str


Record = tuple[str, Any]


class TruncatedInput(Exception):
    """A compressed input ended early; `records` complete records were read before the cut."""

    def __init__(self, name: str, records: int, detail: str):
        super().__init__(f"{name}: truncated gzip after {records:,} records ({detail})")
        self.name, self.records = name, records


def _open_binary(path: Path) -> tuple[IO[bytes], IO[bytes]]:
    """(reader, raw file): gzip is detected by its magic bytes, not the name."""
    raw = open(path, "rb", buffering=READ_BUFFER)
    if raw.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    return raw, raw


def _first_char(fh: IO[bytes]) -> str:
    head = fh.peek(4096) if hasattr(fh, "peek") else b""
    text = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    return text[:1].decode("ascii", "replace")


class Source:
    """One input (file or directory): `records()` streams it; `position()`/`total` measure progress in
    bytes of the input as stored (compressed bytes for .gz)."""

    def __init__(self, path: str | os.PathLike, kind: str | None = None):
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no such file or directory: {self.path}")
        self._raw: IO[bytes] | None = None
        self._done_bytes = 0
        if self.path.is_dir():
            self.kind = "dir"
            self.total = sum(p.stat().st_size for p in dump_files(self.path))
        else:
            self.total = self.path.stat().st_size
            self.kind = kind or self._sniff()

    def _sniff(self) -> str:
        fh, raw = _open_binary(self.path)
        try:
            first = _first_char(fh) if hasattr(fh, "peek") else ""
        finally:
            fh.close()
            raw.close()
        name = self.path.name.removesuffix(".gz")
        if first == "[" or (name.endswith(".json") and first == "{"):
            return "json"
        return "jsonl"

    def position(self) -> int:
        raw = self._raw
        try:
            return self._done_bytes + (raw.tell() if raw is not None and not raw.closed else 0)
        except (OSError, ValueError):
            return self._done_bytes

    def records(self) -> Iterator[Record]:
        if self.kind == "dir":
            yield from self._dir_records()
            return
        fh, raw = _open_binary(self.path)
        self._raw = raw
        count = 0
        try:
            if self.kind == "jsonl":
                records = jsonl_records(fh, str(self.path))
            else:
                text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="strict", newline="")
                records = json_stream_records(text, str(self.path))
            try:
                for record in records:
                    count += 1
                    yield record
            except (EOFError, gzip.BadGzipFile) as exc:
                # a cut .gz: the lines decoded before the cut were yielded; the partial last one is not
                raise TruncatedInput(str(self.path), count, str(exc) or type(exc).__name__) from None
        finally:
            fh.close()
            raw.close()
            self._raw = None
            self._done_bytes = self.total

    def _dir_records(self) -> Iterator[Record]:
        for p in dump_files(self.path):
            yield str(p), read_json_file(p)
            self._done_bytes += p.stat().st_size


def dump_files(root: Path) -> Iterator[Path]:
    """`*.json` / `*.json.gz` files under root, recursively, in sorted order, listed one directory at a time."""
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.is_dir():
            yield from dump_files(Path(entry.path))
        elif entry.is_file() and entry.name.endswith((".json", ".json.gz")):
            yield Path(entry.path)


def open_source(path: str | os.PathLike) -> Source:
    return Source(path)


def read_json_file(path: Path) -> Any:
    """One whole JSON document (a dump file), or Malformed."""
    try:
        fh, raw = _open_binary(path)
        with raw, fh:
            data = fh.read()
        return json.loads(data)
    except (OSError, EOFError) as exc:
        return Malformed(f"cannot read: {exc}")
    except UnicodeDecodeError as exc:
        return Malformed(f"not UTF-8: {exc.reason} at byte {exc.start}")
    except json.JSONDecodeError as exc:
        return Malformed(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")


def jsonl_records(fh: IO[bytes], name: str) -> Iterator[Record]:
    """One record per non-blank line, as bytes; location `name:line` (1-based)."""
    for lineno, line in enumerate(fh, 1):
        line = line.strip()
        if line:
            yield f"{name}:{lineno}", line


def json_stream_records(fh: IO[str], name: str, chunk_chars: int = CHUNK_CHARS) -> Iterator[Record]:
    """Values of a JSON array (`[v, v, …]`) or of concatenated JSON values, parsed incrementally.

    Memory holds one chunk plus the value being parsed. After malformed JSON the rest of the input cannot
    be delimited reliably, so one Malformed record ends the stream.
    """
    decoder = json.JSONDecoder()
    buf, pos, line, eof = "", 0, 1, False
    in_array: bool | None = None    # None until the first non-blank character is seen
    expect_value = True             # in an array: False after a value, until the comma
    after_comma = False             # in an array: a comma was the last token (so `]` would be a trailing comma)

    def more(want: int) -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        data = fh.read(want)
        if not data:
            eof = True
            return False
        buf = buf[pos:] + data
        pos = 0
        return True

    while True:
        # Skip blanks, counting lines.
        while True:
            n = len(buf)
            start = pos
            while pos < n and buf[pos] in " \t\r\n":
                pos += 1
            line += buf.count("\n", start, pos)
            if pos < n or not more(chunk_chars):
                break
        if pos >= len(buf):
            if in_array:
                yield f"{name}:{line}", Malformed("unexpected end of input: the JSON array is not closed")
            return
        ch = buf[pos]
        if in_array is None:
            in_array = ch == "["
            if in_array:
                pos += 1
                continue
        elif in_array:
            if ch == "]" and not after_comma:
                pos += 1
                rest_ok = _only_blanks_left(buf, pos, fh)
                if not rest_ok:
                    yield f"{name}:{line}", Malformed("unexpected data after the end of the JSON array")
                return
            if not expect_value:
                if ch != ",":
                    yield f"{name}:{line}", Malformed(f"expected ',' or ']' but found {ch!r}")
                    return
                pos += 1
                expect_value = after_comma = True
                continue
        location = f"{name}:{line}"
        want = chunk_chars
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                # An error near the end of the buffer (or an open string) may just be a value cut by the chunk.
                truncated = exc.pos >= len(buf) - 64 or exc.msg.startswith("Unterminated string")
                if truncated and len(buf) - pos < MAX_ELEMENT_CHARS and more(want):
                    want = max(want, len(buf))  # grow geometrically: big values parse in O(n log n)
                    continue
                col_line = line + buf.count("\n", pos, exc.pos)
                yield location, Malformed(f"invalid JSON: {exc.msg} at line {col_line}")
                return
            if end == len(buf) and not eof and more(want):
                continue  # a number at the buffer's end may go on in the next chunk
            break
        line += buf.count("\n", pos, end)
        pos = end
        expect_value = after_comma = False
        yield location, value
        if pos > chunk_chars:
            buf, pos = buf[pos:], 0


def _only_blanks_left(buf: str, pos: int, fh: IO[str]) -> bool:
    if buf[pos:].strip():
        return False
    while data := fh.read(CHUNK_CHARS):
        if data.strip():
            return False
    return True
