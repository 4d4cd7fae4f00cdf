"""Normalise NACP declarations so views can compute on them: pure functions, no I/O.

What `normalise(doc)` does (and nothing else):
- unwraps the real dump shape `{"id": ..., "data": {step_0 …}}` into the bare declaration with `_id`
  (`nacp_<uuid>`); other wrapper fields are kept under `dnt_source`;
- numbers: values of the fields in NUMERIC_FIELDS ("12 345,67", "1,5", "1 000", NBSP separators …) become
  floats; a value that does not parse ("-", "", "[Конфіденційна інформація]", …) becomes 0.0 and gets a
  sibling flag `dnt_<field>_hidden: true`;
- every other empty or confidential string value becomes the one marker HIDDEN ("[hidden]");
- item sections (`step_2` … `step_17`) written as lists become objects keyed by the item's `iteration`
  (or `id`; else its list index); the `{"empty": "Об'єкт декларування відсутній"}` marker becomes `{}`;
- optionally (`compact_id=True`) `_id` `nacp_<uuid>` becomes `d` + the 22-character base64url of the
  UUID's 16 bytes (the `d` keeps ids from starting with `_` or `-`, which base64url can produce).

It never mutates its input and is idempotent: normalise(normalise(d)) == normalise(d).
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from typing import Any

HIDDEN = "[hidden]"

# Fields whose values are amounts, areas or counts in the NACP schema.
NUMERIC_FIELDS = frozenset({
    "sizeIncome", "sizeAssets", "sizeObligation", "costDate", "costDateUse", "costAssessment", "costAmount",
    "cost", "totalArea", "amount", "cost_percent", "percent-ownership", "residualAmount", "sum",
})

# Values that mean "not disclosed / not known / not applicable" in the dumps (compared case-insensitively,
# with surrounding brackets and spaces ignored).
CONFIDENTIAL_VALUES = frozenset(v.casefold() for v in (
    "Конфіденційна інформація", "Не відомо", "Не застосовується", "Член сім'ї не надав інформацію",
    "Член сім’ї не надав інформацію", "Інформація відсутня", "Не визначено", "hidden",
))

ITEM_SECTIONS = frozenset(f"step_{n}" for n in range(2, 18))
EMPTY_MARKER_KEY = "empty"

_SPACES = str.maketrans("", "", " \u00a0\u202f\u2009\u2007\t")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_NACP_ID = re.compile(r"^(?:nacp_)?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


def parse_number(value: Any) -> float | None:
    """A NACP amount as float, or None when it is not a number.

    Accepts numbers and strings with spaces/NBSP as thousands separators and a comma or dot as the decimal
    mark ("12 345,67", "1,5", "1.234,56", "1,234.56"); rejects booleans, NaN/inf and anything else.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if not isinstance(value, str):
        return None
    text = value.translate(_SPACES)
    if "," in text:
        if "." in text:  # the later mark is the decimal one; the other separates thousands
            if text.rfind(",") > text.rfind("."):
                text = text.replace(".", "").replace(",", ".")
            else:
                text = text.replace(",", "")
        elif text.count(",") == 1:
            text = text.replace(",", ".")
        else:  # "1,234,567"
            text = text.replace(",", "")
    if not _NUMBER.fullmatch(text):
        return None
    f = float(text)
    return f if math.isfinite(f) else None


def is_hidden_value(value: Any) -> bool:
    """True for empty strings and the confidential/unknown markers of the dumps."""
    if not isinstance(value, str):
        return False
    text = value.strip().strip("[]").strip()
    return not text or text.casefold() in CONFIDENTIAL_VALUES


def short_id(doc_id: str) -> str:
    """`nacp_<uuid>` (or a bare UUID) -> 'd' + 22-char base64url of the UUID bytes; other ids unchanged."""
    m = _NACP_ID.match(doc_id) if isinstance(doc_id, str) else None
    if not m:
        return doc_id
    return "d" + base64.urlsafe_b64encode(uuid.UUID(m.group(1)).bytes).decode("ascii").rstrip("=")


def expand_id(doc_id: str) -> str:
    """Inverse of short_id for compact ids; other ids unchanged."""
    if isinstance(doc_id, str) and len(doc_id) == 23 and doc_id[0] == "d":
        try:
            raw = base64.urlsafe_b64decode(doc_id[1:] + "==")
        except (ValueError, TypeError):
            return doc_id
        if len(raw) == 16:
            return f"nacp_{uuid.UUID(bytes=raw)}"
    return doc_id


def unwrap(obj: dict) -> dict:
    """The bare declaration from a dump record `{"id": ..., "data": {...}}`; bare declarations unchanged."""
    data = obj.get("data")
    if not isinstance(data, dict) or "_id" in obj or not any(k.startswith("step_") for k in data):
        return obj
    doc: dict[str, Any] = {}
    raw_id = obj.get("id")
    if isinstance(raw_id, str) and raw_id:
        m = _NACP_ID.match(raw_id)
        doc["_id"] = f"nacp_{m.group(1).lower()}" if m else raw_id
    doc.update(data)
    rest = {k: v for k, v in obj.items() if k not in ("id", "data")}
    if rest:
        doc["dnt_source"] = rest
    return doc


def _value(key: str, value: Any, out: dict) -> None:
    if key in NUMERIC_FIELDS:
        number = parse_number(value)
        if number is None:
            out[key] = 0.0
            out[f"dnt_{key}_hidden"] = True
        else:
            out[key] = number
    elif isinstance(value, dict):
        out[key] = _object(value)
    elif isinstance(value, list):
        out[key] = [_object(v) if isinstance(v, dict) else _scalar(v) for v in value]
    else:
        out[key] = _scalar(value)


def _scalar(value: Any) -> Any:
    return HIDDEN if type(value) is str and _hidden_str(value) else value


_hidden_memo: dict[str, bool] = {}


def _hidden_str(value: str) -> bool:
    """is_hidden_value for strings, memoised: the dumps repeat the same short strings a lot."""
    hit = _hidden_memo.get(value)
    if hit is None:
        hit = is_hidden_value(value)
        if len(value) < 100:
            if len(_hidden_memo) > 50_000:
                _hidden_memo.clear()
            _hidden_memo[value] = hit
    return hit


def _object(obj: dict) -> dict:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if type(value) is str and key not in NUMERIC_FIELDS:  # the common case, inlined
            out[key] = HIDDEN if _hidden_str(value) else value
        else:
            _value(key, value, out)
    return out


def items_by_id(items: list) -> dict:
    """A list-shaped section as an object keyed by each item's `iteration` (or `id`; else its index)."""
    out: dict[str, Any] = {}
    for index, item in enumerate(items):
        key = None
        if isinstance(item, dict):
            for field in ("iteration", "id"):
                v = item.get(field)
                if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                    key = str(v)
                    break
        if key is None or key in out:
            key = str(index) if str(index) not in out else f"{key}#{index}"
        out[key] = item
    return out


def _section(value: Any) -> Any:
    if isinstance(value, list):
        value = items_by_id(value)
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get(EMPTY_MARKER_KEY), str):
            return {}
        return {k: _object(v) if isinstance(v, dict) else _scalar(v) for k, v in value.items()}
    return _scalar(value)


def normalise(doc: dict, *, compact_id: bool = False) -> dict:
    """A normalised copy of one declaration (bare or wrapped); see the module docstring."""
    doc = unwrap(doc)
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key.startswith("_"):  # CouchDB's own fields (_id, _rev, _attachments …) stay as they are
            out[key] = value
        elif key in ITEM_SECTIONS:
            out[key] = _section(value)
        else:
            _value(key, value, out)
    if compact_id and isinstance(out.get("_id"), str):
        out["_id"] = short_id(out["_id"])
    return out
