-- document_dates: when each current article first appeared — the earliest ingested dump in which its page id or
-- its title was seen as an article (first_dump), and whether that is only "on or before" (the wiki's earliest
-- ingested dump: the page may be older).  revised_at is the dump's revision time of the article.  Articles of a
-- language with no dated dump ingested have no row.
CREATE OR REPLACE VIEW document_dates AS
SELECT d.lang, d.page_id, d.title, least(i.dump_date, t.dump_date) AS first_dump,
       least(i.dump_date, t.dump_date) = e.earliest AS on_or_before, d.timestamp AS revised_at
FROM documents_raw AS d
JOIN (SELECT lang, min(dump_date) AS earliest FROM appearance_dumps GROUP BY lang) AS e ON e.lang = d.lang
LEFT JOIN first_seen AS i ON i.lang = d.lang AND i.key_kind = 'page_id' AND i.key = CAST(d.page_id AS VARCHAR)
LEFT JOIN first_seen AS t ON t.lang = d.lang AND t.key_kind = 'title' AND t.key = d.title
WHERE d.namespace = 0 AND NOT d.is_redirect;
