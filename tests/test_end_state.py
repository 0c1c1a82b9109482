"""The end state read from a trace (no model) and argument matching: written-out expectations."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import Message, Sample, Score, ToolCall
from assay.errors import ConfigError
from assay.metrics._endstate import StateChanges, read_end_state
from assay.metrics._matching import ArgumentMatch, same_json


def call(name: str, id: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=id)


TRACE = (
    Message(role="system", content="Policy: refunds only with insurance."),
    Message(role="user", content="Cancel ABC and book me to Paris."),
    Message(role="assistant", tool_calls=(call("get_reservation_details", "a", reservation_id="ABC"),)),
    Message(role="tool", tool_call_id="a", content='{"id": "ABC", "insurance": "no"}'),
    Message(role="assistant", tool_calls=(call("cancel_reservation", "b", reservation_id="ABC"),)),
    Message(role="tool", tool_call_id="b", content="Error: reservation ABC is basic economy"),
    Message(role="assistant", tool_calls=(call("book_reservation", "c", city="Paris"), call("think", "d", t="ok"))),
    Message(role="tool", tool_call_id="d", content=""),
    Message(role="tool", tool_call_id="c", content='{"reservation_id": "NEW1"}'),
    Message(role="assistant", content="Booked NEW1; ABC could not be cancelled."),
)


def test_every_call_has_its_result_its_outcome_and_its_kind() -> None:
    end = read_end_state(TRACE)
    assert [(a.number, a.message, a.name, a.state_changing, a.succeeded) for a in end.actions] == [
        (1, 3, "get_reservation_details", False, True),
        (2, 5, "cancel_reservation", True, False),
        (3, 7, "book_reservation", True, True),
        (4, 7, "think", False, True),
    ]
    assert end.actions[2].result == '{"reservation_id": "NEW1"}'  # answered by id, not by position
    assert [a.number for a in end.performed] == [3]
    assert end.final_reply == "Booked NEW1; ABC could not be cancelled."
    assert end.policy == "Policy: refunds only with insurance."
    assert end.kinds == "inferred from tool names"


def test_the_record_lists_state_changes_with_their_outcome() -> None:
    record = read_end_state(TRACE).record()
    assert record["kinds"] == "inferred from tool names"
    assert [(c["call"], c["tool"], c["outcome"]) for c in record["state_changes"]] == [
        (2, "cancel_reservation", "failed"),
        (3, "book_reservation", "succeeded"),
    ]
    assert record["read_calls"] == 2
    assert json.loads(json.dumps(record)) == record  # JSON-ready
    assert "failed: call 2 cancel_reservation" in read_end_state(TRACE).summary()


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("get_user_details", False),
        ("getUserDetails", False),
        ("functions.search_flights", False),
        ("list-airports", False),
        ("calculate", False),
        ("think", False),
        ("transfer_to_human_agents", False),
        ("book_reservation", True),
        ("cancelOrder", True),
        ("send_certificate", True),
        ("update_reservation_flights", True),
        ("transfer_funds", True),  # a transfer of money is not a hand-off
    ],
)
def test_inferred_kinds_follow_the_first_word(name: str, changes: bool) -> None:
    state = StateChanges()
    assert state.changes_state(name, *state.kinds()) is changes


def test_declared_tools_win_then_the_samples_then_inference() -> None:
    trace = (Message(role="assistant", tool_calls=(call("get_x"), call("book_y"), call("ping"))),)
    declared = read_end_state(trace, StateChanges(tools=("get_*",)))
    assert (declared.kinds, [a.state_changing for a in declared.actions]) == ("declared", [True, False, False])
    by_sample = read_end_state(trace, StateChanges(), {"state_changing_tools": ["ping"]})
    assert (by_sample.kinds, [a.state_changing for a in by_sample.actions]) == ("sample metadata", [False, False, True])
    overridden = read_end_state(trace, StateChanges(read_only=("book_*",)))
    assert [a.state_changing for a in overridden.actions] == [False, False, True]
    with pytest.raises(ConfigError, match="list of tool names"):
        read_end_state(trace, StateChanges(), {"state_changing_tools": [1]})
    with pytest.raises(ConfigError, match="not the string"):
        StateChanges(tools="book_*")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "failed"),
    [
        (Message(role="tool", content="Error: no seats"), True),
        (Message(role="tool", content="error"), True),
        (Message(role="tool", content="  ERROR - timeout"), True),
        (Message(role="tool", content='{"error": "not found"}'), True),
        (Message(role="tool", content='{"status": "failed"}'), True),
        (Message(role="tool", content="done", is_error=True), True),
        (Message(role="tool", content="errors_found: 0"), False),
        (Message(role="tool", content='{"error": null, "id": 3}'), False),
        (Message(role="tool", content="Transfer successful"), False),
        (Message(role="tool", content=""), False),
    ],
)
def test_which_results_are_failures(message: Message, failed: bool) -> None:
    assert StateChanges().failed(message) is failed


def test_results_without_ids_answer_the_oldest_open_call_and_missing_results_are_unknown() -> None:
    # Ragas' ToolMessage carries no id and no name.
    trace = (
        Message(role="assistant", tool_calls=(call("book_a"), call("book_b"))),
        Message(role="tool", content="ok a"),
        Message(role="assistant", tool_calls=(call("cancel_c"),)),
    )
    end = read_end_state(trace)
    assert [(a.name, a.result, a.succeeded) for a in end.actions] == [
        ("book_a", "ok a", True),
        ("book_b", None, None),
        ("cancel_c", None, None),
    ]
    assert [a.number for a in end.performed] == [1, 2, 3]  # no result: counted as performed, marked so
    assert end.record()["state_changes"][1]["outcome"] == "no result"


def test_an_unparseable_call_is_shown_as_such() -> None:
    trace = (Message(role="assistant", tool_calls=(ToolCall(name="book", arguments={"__invalid_arguments__": "{x"}),)),)
    assert read_end_state(trace).actions[0].signature() == "book(<invalid JSON: {x>)"


# --- argument matching ------------------------------------------------------------------------------


BOOK = call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2, note="window")


@pytest.mark.parametrize(
    ("match", "actual", "difference"),
    [
        (ArgumentMatch(), BOOK, None),
        (ArgumentMatch(), call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2.0, note="window"),
         None),
        (ArgumentMatch(), call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats="2", note="window"),
         'seats: expected 2, got "2"'),
        (ArgumentMatch(), call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2, note=" window "),
         None),
        (ArgumentMatch(normalize=False),
         call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2, note=" window "),
         'note: expected "window", got " window "'),
        (ArgumentMatch(), call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2),
         "missing arguments note"),
        (ArgumentMatch(), call("book", flights=[{"number": "HAT1", "date": "2024-05-20", "origin": "JFK"}], seats=2,
                               note="window", user="mia"),
         'unexpected arguments user; flights: expected [{"number": "HAT1", "date": "2024-05-20"}], got '
         '[{"number": "HAT1", "date": "2024-05-20", "origin": "JFK"}]'),
        (ArgumentMatch(mode="expected_keys"),
         call("book", flights=[{"number": "HAT1", "date": "2024-05-20", "origin": "JFK"}], seats=2, note="window",
              user="mia"), None),
        (ArgumentMatch(mode="expected_keys"), call("book", flights=[{"number": "HAT1"}], seats=2, note="window"),
         'flights: expected [{"number": "HAT1", "date": "2024-05-20"}], got [{"number": "HAT1"}]'),
        (ArgumentMatch(mode="names"), call("book"), None),
        (ArgumentMatch(mode="names"), call("cancel"), "cancel is not book"),
        (ArgumentMatch(ignore=("note",)), call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2),
         None),
        (ArgumentMatch(ignore=("book.note",)),
         call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2, note="aisle"), None),
        (ArgumentMatch(ignore=("other.note",)),
         call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2, note="aisle"),
         'note: expected "window", got "aisle"'),
        (ArgumentMatch(compare={"note": lambda e, a: e.lower() == a.lower()}),
         call("book", flights=[{"number": "HAT1", "date": "2024-05-20"}], seats=2, note="WINDOW"), None),
        (ArgumentMatch(), ToolCall(name="book", arguments={"__invalid_arguments__": '{"seats": 2'}),
         'the call\'s arguments are not valid JSON: "{\\"seats\\": 2"'),
    ],
)  # fmt: skip
def test_argument_modes(match: ArgumentMatch, actual: ToolCall, difference: str | None) -> None:
    assert match.difference(BOOK, actual) == difference
    assert match.matches(BOOK, actual) is (difference is None)


def test_strings_normalise_to_nfc_and_case_is_kept() -> None:
    composed, decomposed = "Café", unicodedata.normalize("NFD", "Café")
    assert composed != decomposed
    assert same_json(composed, decomposed, normalize=True)
    assert not same_json(composed, decomposed)
    assert not same_json("abc", "ABC", normalize=True)


def test_an_argument_match_is_checked_when_built() -> None:
    with pytest.raises(ConfigError, match="exact, expected_keys or names"):
        ArgumentMatch(mode="subset")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not callable"):
        ArgumentMatch(compare={"x": 3})  # type: ignore[dict-item]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=10,
)


@given(json_values)
def test_a_value_matches_itself_and_its_json_round_trip(value: Any) -> None:
    assert same_json(value, value)
    assert same_json(value, json.loads(json.dumps(value)))
    assert same_json(value, value, subset=True)


@given(st.dictionaries(st.text(max_size=3), json_values, max_size=4), st.dictionaries(st.text(max_size=3), json_values))
def test_expected_keys_accepts_any_additions_and_exact_only_equal_keys(
    expected: dict[str, Any], more: dict[str, Any]
) -> None:
    actual = {**more, **expected}
    assert same_json(expected, actual, subset=True)
    assert same_json(expected, actual) is (actual.keys() == expected.keys())


@given(json_values, json_values)
def test_matching_is_symmetric_in_exact_mode(a: Any, b: Any) -> None:
    assert same_json(a, b) is same_json(b, a)


def test_bool_is_never_a_number() -> None:
    assert not same_json(True, 1) and not same_json(0, False) and same_json(1, 1.0)


# --- a score carries details ------------------------------------------------------------------------


def test_details_travel_with_a_score_and_are_left_out_of_records_when_absent() -> None:
    with_details = Score.scored("m", 1.0, details={"end_state": {"state_changes": []}})
    assert Score.model_validate_json(with_details.model_dump_json()).details == {"end_state": {"state_changes": []}}
    assert "details" not in Score.scored("m", 1.0).model_dump()
    # A sample's trace (tool results named after their calls) reads the same way.
    assert read_end_state(Sample(id="s", trace=TRACE).trace) == read_end_state(TRACE)
