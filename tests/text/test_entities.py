"""Article titles as a gazetteer: boundaries in spaced scripts, none in unsegmented ones, longest match wins."""

from __future__ import annotations

import random

from tasks.text.entities import EntityMatcher, surface_forms, title_names


def test_surface_forms_drop_a_trailing_qualifier() -> None:
    assert surface_forms("Mirra (river)") == {"Mirra (river)", "Mirra"}
    assert surface_forms("交響曲第3番 (ハルヴァル)") == {"交響曲第3番 (ハルヴァル)", "交響曲第3番"}
    assert surface_forms("Io") == set()  # too short to be evidence


def test_word_boundaries_in_spaced_scripts() -> None:
    matcher = EntityMatcher({"Tarsk": "Q5", "Tarsk Central Station": "Q31", "Velna": "Q1"}, "en")
    found = matcher.find("Trains leave Tarsk Central Station for Tarskian towns along the Velna.")
    # "Tarsk" inside the longer station name and inside "Tarskian" does not count
    assert found == {"Q31": {"Tarsk Central Station"}, "Q1": {"Velna"}}


def test_unsegmented_scripts_match_inside_text() -> None:
    matcher = EntityMatcher({"タルスク": "Q5", "タルスク中央駅": "Q31"}, "ja")
    assert matcher.find("タルスク中央駅からタルスクの町へ") == {"Q31": {"タルスク中央駅"}, "Q5": {"タルスク"}}


def test_a_form_of_two_entities_is_ambiguous_and_left_out() -> None:
    names = title_names([("Mirra (river)", "Q2"), ("Mirra (singer)", "Q77"), ("Velna", "Q1"), ("Orphan", None)])
    assert names == {"Mirra (river)": "Q2", "Mirra (singer)": "Q77", "Velna": "Q1"}


def _kept_by_rule(names: dict[str, str], text: str) -> dict[str, set[str]]:
    """The documented rule, by brute force: every occurrence at word boundaries, longest first then leftmost, each
    kept unless it overlaps one kept before."""
    occurrences = []
    for form in names:
        start = text.find(form)
        while start != -1:
            stop = start + len(form)
            if (start == 0 or not text[start - 1].isalnum()) and (stop == len(text) or not text[stop].isalnum()):
                occurrences.append((start, stop))
            start = text.find(form, start + 1)
    occurrences.sort(key=lambda span: (-(span[1] - span[0]), span[0]))
    kept: list[tuple[int, int]] = []
    found: dict[str, set[str]] = {}
    for start, stop in occurrences:
        if all(stop <= other_start or other_stop <= start for other_start, other_stop in kept):
            kept.append((start, stop))
            found.setdefault(names[text[start:stop]], set()).add(text[start:stop])
    return found


def test_overlapping_matches_keep_the_longest_then_the_leftmost_on_random_texts() -> None:
    rng = random.Random(41)
    for _ in range(300):
        forms = {" ".join(rng.choice(["ab", "abc", "ba", "b", "cab"]) for _ in range(rng.randint(1, 4)))
                 for _ in range(rng.randint(1, 12))}
        names = {form: f"Q{rng.randint(1, 5)}" for form in forms if len(form) >= 3}
        text = " ".join(rng.choice(["ab", "abc", "ba", "b", "cab", "x", "ab,"]) for _ in range(rng.randint(5, 120)))
        assert EntityMatcher(names, "en").find(text) == _kept_by_rule(names, text), (names, text)
