-- Where the text an instance shows comes from, as a published benchmark names it ([{wiki, lang, page_id,
-- revision_id, title, url, dump}], one per document): kept by `babelbench import hf` from the folder it reads, so a
-- benchmark downloaded and published again keeps its attribution.  NULL for a benchmark built here or imported from
-- another layout: `babelbench publish` then finds each document's article in the corpus.
ALTER TABLE instances ADD COLUMN sources JSON;
