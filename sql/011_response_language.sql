-- The language of each response, as lingua reads it (tasks/inference/language.py).
-- language_status: ok | unsupported (lingua does not know the question's language) | too_short;
-- the numbers are NULL unless it is ok.  NULL everywhere for a response that failed.
ALTER TABLE responses ADD COLUMN language_status VARCHAR;
ALTER TABLE responses ADD COLUMN detected_lang VARCHAR;
ALTER TABLE responses ADD COLUMN target_prob DOUBLE;
ALTER TABLE responses ADD COLUMN english_prob DOUBLE;
ALTER TABLE responses ADD COLUMN switched_share DOUBLE;       -- share of sentences in another language
