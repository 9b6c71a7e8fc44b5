"""Evidence in the reply: the judge's quotes of the agent's reply, found in the reply.

A verdict names the words of the reply it rests on as quotes; they are model output, so each
is looked up in the reply and becomes a character span ``{"start", "end", "quote"}`` with the
reply's own text at those offsets — or is refused. The lookup forgives what a model changes
when it copies (case, runs of blanks, typographic quotes and dashes, an ellipsis between two
copied pieces) and nothing else: a quote that is not in the reply is never shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from workbench.errors import WorkbenchError

MIN_QUOTE_CHARS = 3
MAX_QUOTES = 3
_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                       "\u2013": "-", "\u2014": "-", "\u00a0": " "})
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")


class EvidenceNotInReply(WorkbenchError, ValueError):
    """A quote the judge gave is not in the reply (the message says which, for a repair)."""


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased with quotes/dashes unified and blank runs made one space, and for
    each character of the result the offset in ``text`` it comes from."""
    out: list[str] = []
    where: list[int] = []
    blank = False
    for i, ch in enumerate(text):
        ch = ch.translate(_FOLD)
        if ch.isspace():
            if not blank and out:
                out.append(" ")
                where.append(i)
            blank = True
            continue
        blank = False
        low = ch.lower()
        out.extend(low)
        where.extend([i] * len(low))
    return "".join(out), where


def _find(reply: str, folded: str, where: list[int], piece: str, after: int) -> tuple[int, int] | None:
    exact = reply.find(piece, after)
    if exact != -1:
        return exact, exact + len(piece)
    target, _ = _folded(piece.strip())
    target = target.strip(" \"'")
    if len(target) < MIN_QUOTE_CHARS:
        return None
    start_f = 0
    while start_f < len(where) and where[start_f] < after:
        start_f += 1
    at = folded.find(target, start_f)
    if at == -1:
        return None
    return where[at], where[at + len(target) - 1] + 1


def locate_quotes(reply: str, quotes: Sequence[Any]) -> list[dict[str, Any]]:
    """The spans of ``quotes`` in ``reply``, in the order given, each ``{"start", "end",
    "quote"}`` where ``quote == reply[start:end]``. A quote with an ellipsis is its pieces,
    each found after the one before. Raises :class:`EvidenceNotInReply` naming the first quote
    that is not there (or too short to point at anything)."""
    folded, where = _folded(reply)
    spans: list[dict[str, Any]] = []
    for quote in list(quotes)[:MAX_QUOTES]:
        if not isinstance(quote, str) or len(quote.strip()) < MIN_QUOTE_CHARS:
            raise EvidenceNotInReply(
                f"evidence {quote!r} is too short: quote at least a few words of the REPLY")
        after = 0
        for piece in (p for p in _ELLIPSIS.split(quote.strip()) if p.strip()):
            found = _find(reply, folded, where, piece, after)
            if found is None:
                raise EvidenceNotInReply(
                    f"evidence {quote[:120]!r} is not in the REPLY; copy the exact words of the "
                    "REPLY that break the rule, or give no evidence")
            start, end = found
            spans.append({"start": start, "end": end, "quote": reply[start:end]})
            after = end
    return with_quotes(reply, _merged(spans))


def _merged(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Repeated or overlapping spans once, in reply order (two quotes of one sentence)."""
    ordered = sorted(spans, key=lambda s: (s["start"], s["end"]))
    out: list[dict[str, Any]] = []
    for span in ordered:
        if out and span["start"] < out[-1]["end"]:
            if span["end"] > out[-1]["end"]:
                out[-1]["end"] = span["end"]
            continue
        out.append(dict(span))
    return out


def with_quotes(reply: str, spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``spans`` with each quote re-read from ``reply`` (after merging), dropping any span
    that does not lie inside the reply (a stored trace edited by hand)."""
    out = []
    for s in spans:
        start, end = s.get("start"), s.get("end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(reply):
            out.append({"start": start, "end": end, "quote": reply[start:end]})
    return out
