-- qa_status: every generated QA item with its quality-control outcome.
--   qc_status: the generation status when it is not 'ok'; else
--     'accepted_review' / 'rejected_review'  a person decided (latest decision wins, over any machine check),
--     'flagged'                              a rule or the LLM pre-screen failed a check, no person decided,
--     'unreviewed'                           no check failed.
--   answer: a person's corrected answer when one was given.
--   failed_checks: the machine checks that failed, with who failed them.
CREATE OR REPLACE VIEW qa_status AS
WITH latest AS (
    SELECT *, starts_with(reviewer, 'human:') AS human
    FROM qa_reviews
    QUALIFY row_number() OVER (PARTITION BY benchmark, item_id, check_name, starts_with(reviewer, 'human:')
                               ORDER BY decided_at DESC) = 1
),
people AS (
    SELECT benchmark, item_id,
           arg_max(verdict, decided_at) AS verdict,
           arg_max(corrected_answer, decided_at) FILTER (WHERE corrected_answer IS NOT NULL) AS corrected_answer,
           arg_max(reviewer, decided_at) AS reviewer
    FROM latest WHERE human GROUP BY ALL
),
machine AS (
    SELECT benchmark, item_id,
           list(check_name || ' (' || reviewer || ')' ORDER BY check_name) FILTER (WHERE verdict = 'fail') AS failed_checks
    FROM latest WHERE NOT human GROUP BY ALL
)
SELECT q.benchmark, q.item_id, q.recipe, q.lang, q.qtype, q.question,
       coalesce(p.corrected_answer, q.answer) AS answer, q.context, q.documents, q.used_pairs,
       q.status, q.reason,
       CASE WHEN q.status <> 'ok' THEN q.status
            WHEN p.verdict = 'pass' THEN 'accepted_review'
            WHEN p.verdict = 'fail' THEN 'rejected_review'
            WHEN len(coalesce(m.failed_checks, [])) > 0 THEN 'flagged'
            ELSE 'unreviewed' END AS qc_status,
       coalesce(m.failed_checks, []) AS failed_checks,
       p.reviewer
FROM qa_items q
LEFT JOIN people p USING (benchmark, item_id)
LEFT JOIN machine m USING (benchmark, item_id);
