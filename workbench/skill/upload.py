"""Guards for SKILLs uploaded to be extracted: refuse files with no policy text before any
model call, estimate how long an extraction takes, and say which uploaded file a message is
about (not the server's temporary path).

Issue #16: random bytes in a ``.md`` (8 model calls) and an empty ``.md`` became SKILLs with
"0 rules, 0 edges"; a 2 MB upload started 24,470 blocks at ~12 s each without a warning.

Usage::

    problem = screen_upload("SKILL.md", data)     # None, or what is wrong and what to do
    seconds = extraction_seconds(n_blocks)
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from workbench.inputs import InputError, decode_text
from workbench.llm.speed import describe_duration as describe_duration  # its home before

# Measured on the embedded extractor (Qwen2.5-Coder-1.5B on CPU, issue #16): ~12 s a block.
SECONDS_PER_BLOCK = 12.0
# Fusion (merge map and cross-block edges) costs about one more block per ten.
FUSION_SHARE = 0.1
# Above this, the page asks for an explicit confirmation before it starts.
CONFIRM_ABOVE_SECONDS = 15 * 60

MIN_LETTERS = 40  # a SKILL with fewer letters than a sentence has no rule to extract
MAX_REPLACEMENT_SHARE = 0.02  # more undecodable bytes than this: not a text file

_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*(\n|\Z)", re.S)
_LETTER = re.compile(r"[^\W\d_]", re.U)


def screen_upload(name: str, data: bytes) -> str | None:
    """``None`` when ``data`` (an uploaded ``.md``) can be a SKILL, else a message naming
    ``name``, what is wrong, and what to do. Archives (``.zip``) are not screened here."""
    if not data.strip():
        return f"{name} is empty: there is no policy text to extract. Choose the SKILL.md file " \
               "that holds the policy."
    try:
        text, _warnings = decode_text(data, name, lenient=True)
    except InputError as exc:  # binary (NUL bytes) or UTF-16/32
        return f"{name} is not a UTF-8 text file ({exc.problem}); re-save it as UTF-8 Markdown."
    bad = text.count("\ufffd")
    if bad > max(3, MAX_REPLACEMENT_SHARE * len(text)):
        return f"{name} does not look like text ({bad} of {len(text)} characters are not " \
               "UTF-8): it may be a binary file renamed to .md. Upload the policy as UTF-8 Markdown."
    body = _FRONT_MATTER.sub("", text, count=1)
    letters = len(_LETTER.findall(body))
    if letters < MIN_LETTERS:
        return f"{name} has no policy text (only {letters} letters after the front matter): " \
               "nothing to extract. Add the policy's text, or choose another file."
    return None


def extraction_seconds(n_blocks: int, seconds_per_block: float = SECONDS_PER_BLOCK) -> float:
    """Rough wall time of extracting ``n_blocks`` blocks (fusion included)."""
    return n_blocks * seconds_per_block * (1 + FUSION_SHARE)


def public_text(text: str, uploaded: Mapping[str, str]) -> str:
    """``text`` with every temporary path in ``uploaded`` (temp path -> uploaded file name)
    replaced by the file name the user chose, so messages never show server paths."""
    for path in sorted(uploaded, key=len, reverse=True):  # longest first: no partial swaps
        text = text.replace(path, uploaded[path])
    return text
