"""Where a sentence clearly ends (the cut of long texts into pieces, and of a reason to one sentence)."""

from __future__ import annotations

import pytest

from assay._text import first_sentence


@pytest.mark.parametrize(
    ("text", "first"),
    [
        (
            "The statement does not mention Melbourne. The context only mentions Kyiv.",
            "The statement does not mention Melbourne.",
        ),
        ("Is it supported? No, the context gives 1,230 km.", "Is it supported?"),
        ("It is wrong! The context says otherwise.", "It is wrong!"),
        ("Sales rose 12%. Revenue fell in 2023. Costs rose.", "Sales rose 12%. Revenue fell in 2023."),
        ("Dr. Smith left. Then he came back.", "Dr. Smith left."),
        ("Mr. Smith met Dr. Jones in St. Louis on No. 5 street", None),
        (
            "The U.S. Army and Dr. Smith disagree here. The context says so.",
            "The U.S. Army and Dr. Smith disagree here.",
        ),
        ("It is 5 km. The context says 6 km.", None),  # a short word before the mark: not a clear end
        ("See e.g. The Times, which says so.", None),
        ("One sentence only.", None),
        ("", None),
    ],
)
def test_the_first_sentence_is_cut_only_where_another_clearly_begins(text: str, first: str | None) -> None:
    assert first_sentence(text) == first
