-- documents: the parsed pages, with the Wikidata QID filled in from sitelinks
-- when the dump format itself does not carry it (XML page dumps).
CREATE OR REPLACE VIEW documents AS
SELECT d.* REPLACE (coalesce(d.qid, s.qid) AS qid)
FROM documents_raw AS d
LEFT JOIN (
    SELECT lang, page_id, any_value(qid) AS qid FROM sitelinks WHERE page_id IS NOT NULL GROUP BY ALL
) AS s ON s.lang = d.lang AND s.page_id = d.page_id;
