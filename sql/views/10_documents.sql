-- documents: the parsed pages, with the Wikidata QID filled in from sitelinks
-- when the dump format itself does not carry it (XML page dumps), and marked as
-- disambiguation pages when a language-independent signal says so (the page
-- property, or the Wikidata item's class) even if the parser's per-language
-- template names missed it. Sitelink shards older than that column read NULL.
CREATE OR REPLACE VIEW documents AS
SELECT d.* REPLACE (coalesce(d.qid, s.qid) AS qid, d.is_disambiguation OR coalesce(s.flagged, FALSE) AS is_disambiguation)
FROM documents_raw AS d
LEFT JOIN (
    SELECT lang, page_id, any_value(qid) AS qid, bool_or(is_disambiguation) AS flagged
    FROM sitelinks WHERE page_id IS NOT NULL GROUP BY ALL
) AS s ON s.lang = d.lang AND s.page_id = d.page_id;
