-- Judges answer in JSON with a short justification before their verdict (tasks/llm/verdicts.py); the
-- justification is kept beside the verdict so a reader can see why. NULL for verdicts without one (an
-- abstention decided without a call, a forfeit, a reply that gave none, rows written before this migration).
ALTER TABLE judgements ADD COLUMN justification VARCHAR;
ALTER TABLE battles ADD COLUMN justification VARCHAR;
