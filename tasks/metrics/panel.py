"""A judge panel's decision on one answer: a strict majority of the whole configured panel.

A verdict that is missing (the judge's call failed, its reply was
unreadable, the budget stopped it) is not a yes: with three judges, two
must say yes even when the third failed, so a panel that lost judges can
never accept more than the full panel would have.  Whether the missing
verdicts could have changed the decision is kept apart (``None``), so a
user who asks to leave undecidable answers out (``--judge-failures
exclude``) can, and everyone else counts them as incorrect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

#: What an answer whose decision the missing verdicts could have changed counts as.
JudgeFailures = Literal["incorrect", "exclude"]


def panel_decision(verdicts: Sequence[str | None]) -> bool | None:
    """True when strictly more than half of the panel said yes, False when that cannot happen even if every
    missing verdict were yes, None when the missing verdicts decide it.

    ``verdicts`` holds one entry per configured judge ('yes' | 'no' | None for a missing verdict); an empty
    panel decides nothing and accepts nothing (False).
    """
    size = len(verdicts)
    yes = sum(v == "yes" for v in verdicts)
    missing = sum(v is None for v in verdicts)
    if 2 * yes > size:
        return True
    return None if 2 * (yes + missing) > size else False

