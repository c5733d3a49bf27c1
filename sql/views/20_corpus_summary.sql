-- corpus_summary: what the warehouse holds per language.
CREATE OR REPLACE VIEW corpus_summary AS
SELECT
    d.lang,
    count(*) FILTER (WHERE NOT d.is_redirect AND NOT d.is_disambiguation) AS articles,
    count(*) FILTER (WHERE d.is_redirect) AS redirects,
    count(*) FILTER (WHERE d.is_disambiguation) AS disambiguation,
    count(d.qid) FILTER (WHERE NOT d.is_redirect) AS with_qid,
    (SELECT count(s.qid) FROM sitelinks AS s WHERE s.lang = d.lang) AS sitelinks
FROM documents AS d
GROUP BY d.lang
ORDER BY d.lang;
