-- document_dates: when each current article first appeared — the earliest ingested dump in which its page id or
-- its title was seen as an article (first_dump), whether that is only "on or before" (the wiki's earliest ingested
-- dump: the page may be older), and the ingested dump before it (appeared_after: the article appeared after that
-- dump, on or before first_dump; NULL when on_or_before).  revised_at is the dump's revision time of the article.
-- Articles of a language with no dated dump ingested have no row.
CREATE OR REPLACE VIEW document_dates AS
WITH firsts AS (
    SELECT d.lang, d.page_id, d.title, least(i.dump_date, t.dump_date) AS first_dump, d.timestamp AS revised_at
    FROM documents_raw AS d
    LEFT JOIN first_seen AS i ON i.lang = d.lang AND i.key_kind = 'page_id' AND i.key = CAST(d.page_id AS VARCHAR)
    LEFT JOIN first_seen AS t ON t.lang = d.lang AND t.key_kind = 'title' AND t.key = d.title
    WHERE d.namespace = 0 AND NOT d.is_redirect
)
SELECT f.lang, f.page_id, f.title, f.first_dump, f.first_dump = min(a.dump_date) AS on_or_before,
       max(a.dump_date) FILTER (WHERE a.dump_date < f.first_dump) AS appeared_after, f.revised_at
FROM firsts AS f JOIN appearance_dumps AS a ON a.lang = f.lang
GROUP BY f.lang, f.page_id, f.title, f.first_dump, f.revised_at;
