"""The data fencing every prompt uses: text from users, policies, conversations and models
can neither close a block of the prompt nor write a chat-template token.

:func:`defuse` is applied to every value any prompt template is filled with (by the one
template reader, ``workbench.prompts.template``: audit, extraction and fusion prompts alike;
and the repair turn of a structured call): text that looks like
one of the prompts' data tags (``<policy>``, ``</reply>``) or like a chat-template token
(``<|im_end|>``) is rewritten with a look-alike that the model reads the same but that
neither the server's tokenizer nor the template treats as structure. Ordinary text is left
byte for byte as it is, so request keys (recordings, the response cache) do not change.
:func:`quote` makes a value one line of JSON that cannot end its block at all (the audited
conversation's turns, state and reply).
"""

from __future__ import annotations

import json
import re

DATA_TAGS = ("policy", "state", "conversation", "reply", "rule")
# Spaces are allowed around the slash: "< /reply>" reads as a closing tag to a model.
_TAG = re.compile(r"<\s*(/?)\s*(" + "|".join(DATA_TAGS) + r")\b", re.IGNORECASE)
# "<|im_end|>" and the like: llama.cpp's server tokenizes special tokens in message text,
# so a raw one in data would end the user turn for real.
_SPECIAL = re.compile(r"<\s*\|")
# Escaped inside quoted data: "<" and ">" (no tag or special token survives quoting, in any
# spacing or lookalike order), the characters str.splitlines() breaks at that json.dumps
# leaves raw (a quoted value stays one line), and lone surrogates (not encodable as UTF-8).
_UNSAFE_IN_QUOTES = re.compile("[<>\x85\u2028\u2029\ud800-\udfff]")


def defuse(text: str) -> str:
    """Make data unable to open or close our data tags (``<policy>`` -> ``‹policy>``,
    ``< /reply>`` -> ``‹/reply>``) or to write a chat-template token (``<|`` -> ``‹|``)."""
    text = _TAG.sub(lambda m: "‹" + m.group(1) + m.group(2), text)
    return _SPECIAL.sub("‹|", text)


def quote(value: object, *, sort_keys: bool = False) -> str:
    """``value`` as one line of JSON, safe to place in a prompt as data.

    Standard JSON (``json.loads`` gives ``value`` back), keeping non-ASCII text readable;
    quotes, backslashes and newlines are escaped by JSON itself, and ``<``, ``>``, Unicode
    line separators and lone surrogates as ``\\uXXXX``, so the result has no line break, no
    tag and no chat-template token whatever ``value`` holds.
    """
    text = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys)
    return _UNSAFE_IN_QUOTES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
