"""Article titles as a gazetteer: boundaries in spaced scripts, none in unsegmented ones, longest match wins."""

from __future__ import annotations

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
