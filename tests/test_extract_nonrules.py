"""Which extracted "rules" carry no obligation (workbench/extract/nonrules.py)."""

from __future__ import annotations

import pytest

from workbench.extract.nonrules import non_rule_reason
from workbench.graph import Rule, Span

SOURCE = """## Profile

Each user has a profile containing:
- user id
- date of birth

Checked bag allowance:
- If the booking user is a regular member:
  - 0 free checked bag for each basic economy passenger
  - 1 free checked bag for each economy passenger
- Each extra baggage is 50 dollars.

For example, a gold member gets two bags.
Payment:
There are three membership levels: **regular**, **silver**, **gold**.
The status of an order can be: **pending**, **processed** or **delivered**.
There are two rules: a gold member must never be charged for bags.

Each variant item has the following attributes:
- information about the value of the product options for this item.

As a retail agent, you can help users:
- **cancel or modify pending orders**
- never share another user's orders
The agent can only help the authenticated user.
"""


def rule_on(text: str) -> Rule:
    at = SOURCE.index(text)
    return Rule("R1", "c", "a", "required", (Span(at, at + len(text)),))


@pytest.mark.parametrize("text, reason", [
    ("## Profile", "heading"),
    ("date of birth", "description item"),  # an attribute under a lead-in that asks nothing
    ("For example, a gold member gets two bags.", "example"),
    ("Payment:", "lead-in"),
    # Items under a condition are the condition's consequences, not attributes: the lead-in
    # of a nested item is its parent item, not the list's title two lines up.
    ("0 free checked bag for each basic economy passenger", None),
    ("1 free checked bag for each economy passenger", None),
    ("Each extra baggage is 50 dollars.", None),  # a sentence may be a rule
    ("There are three membership levels: **regular**, **silver**, **gold**.", "enumeration"),
    ("The status of an order can be: **pending**, **processed** or **delivered**.", "enumeration"),
    ("There are two rules: a gold member must never be charged for bags.", None),  # asks something
    # In lower case the item finishes its lead-in's sentence: an attribute, stop or none.
    ("information about the value of the product options for this item.", "description item"),
    ("As a retail agent, you can help users:", "scope"),
    ("**cancel or modify pending orders**", "scope"),
    ("never share another user's orders", None),  # a duty inside the scope list stays
    ("The agent can only help the authenticated user.", None),  # "only" limits: a rule
])
def test_non_rule_reasons(text, reason):
    assert non_rule_reason(SOURCE, rule_on(text)) == reason
