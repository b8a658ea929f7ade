"""The MCQ / selection answer parser: what it reads, and what it refuses to guess."""
import pytest

from eval_backend.scoring.answer_parser import parse_choice

OPTS = ["Sad", "Happy", "Angry", "Calm"]


@pytest.mark.parametrize("reply, letter", [
    ("The answer is: B", "B"),
    ("B.", "B"),
    ("(B)", "B"),
    ("b", "B"),
    ("**C**", "C"),
    ("Option B", "B"),
    ("answer: b", "B"),
    ("My answer: c.", "C"),
    ("Answer - (D)", "D"),
    ("Answer: Option C", "C"),
    ("The correct option is D.", "D"),
    ("The best choice would be (A)", "A"),
    ("I choose C", "C"),
    ("B. Happy", "B"),
    ("(b) happy", "B"),
    ("D) calm", "D"),
    ("Happy", "B"),                                   # the option's text
    ("The speaker sounds happy to me.", "B"),
    ("It could be A, but listening again... The answer is: C", "C"),   # the last statement counts
    ("The answer is:\n**A**", "A"),
])
def test_reads_the_chosen_letter(reply, letter):
    parsed = parse_choice(reply, "ABCD", OPTS)
    assert parsed.letter == letter, parsed


@pytest.mark.parametrize("reply, why", [
    ("", "empty"),
    (None, "empty"),
    ("I cannot tell from this clip.", "no answer"),
    ("The answer is a bit tricky", "no answer"),            # "a" is a word here, not a label
    ("Maybe option A or option C", "several options"),
    ("Either sad or angry, hard to say.", "ambiguous"),
    ("The answer is (E)", "not an option"),
])
def test_unreadable_answers_are_failures_not_guesses(reply, why):
    parsed = parse_choice(reply, "ABCD", OPTS)
    assert parsed.letter is None and not parsed.ok
    assert why in parsed.rule


def test_letters_outside_the_option_set_are_refused():
    assert parse_choice("C", "AB").letter is None
    assert parse_choice("The answer is: B", "AB").letter == "B"


def test_option_text_needs_whole_words():
    # "sadly" must not match the option "Sad"
    assert parse_choice("He spoke sadly", "ABCD", ["Sad", "Happy", "Angry", "Calm"]).letter is None


def test_mapping_of_option_texts():
    assert parse_choice("sounds like rain", "AB", {"A": "wind", "B": "rain"}).letter == "B"
