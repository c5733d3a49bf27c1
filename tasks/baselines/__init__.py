"""Systems and a judge that need no model (``abstain``, ``extractive``, ``oracle``, ``reference-judge``): registered
as the LLM backend ``baseline`` by name, so the model layer never imports them (see
:mod:`tasks.baselines.backend`)."""
