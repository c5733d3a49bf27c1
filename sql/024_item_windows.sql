-- The window of a live build (qa build --window), on every item it made: the articles it was built from first
-- appeared between these dump dates (both inclusive; window_until NULL: open-ended).  NULL on items built without
-- a window and on imported ones.
ALTER TABLE qa_items ADD COLUMN window_since DATE;
ALTER TABLE qa_items ADD COLUMN window_until DATE;
