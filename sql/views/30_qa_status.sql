-- qa_status: every generated QA item with its quality-control outcome.
--   qc_status: the generation status when it is not 'ok'; else
--     'accepted_review' / 'rejected_review'  people decided, over any machine check: each reviewer's latest
--                                            decision counts, and one reviewer's reject rejects the item,
--     'flagged'                              a rule or the LLM pre-screen failed a check, no person decided,
--     'unchecked'                            no check failed, but a check could not run (its call failed, was
--                                            skipped by the budget, or its reply was unreadable) or the item
--                                            was never screened: no machine vouches for it,
--     'unreviewed'                           every check ran and passed.
--   answer: the latest corrected answer of a reviewer who accepted the item, when one was given.
--   failed_checks / unsure_checks: the machine checks that failed / could not decide, with who ran them.
--   reviewer: the people whose decisions count, comma-separated.
CREATE OR REPLACE VIEW qa_status AS
WITH latest AS (
    SELECT *, starts_with(reviewer, 'human:') AS human
    FROM qa_reviews
    QUALIFY row_number() OVER (PARTITION BY benchmark, item_id, check_name, reviewer ORDER BY decided_at DESC) = 1
),
people AS (
    SELECT benchmark, item_id,
           CASE WHEN bool_or(verdict = 'fail') THEN 'fail' WHEN bool_or(verdict = 'pass') THEN 'pass' END AS verdict,
           arg_max(corrected_answer, decided_at) FILTER (WHERE verdict = 'pass' AND corrected_answer IS NOT NULL)
               AS corrected_answer,
           string_agg(DISTINCT reviewer, ', ' ORDER BY reviewer) AS reviewer
    FROM latest WHERE human GROUP BY ALL
),
machine AS (
    SELECT benchmark, item_id,
           list(check_name || ' (' || reviewer || ')' ORDER BY check_name) FILTER (WHERE verdict = 'fail') AS failed_checks,
           list(check_name || ' (' || reviewer || ')' ORDER BY check_name) FILTER (WHERE verdict = 'unsure') AS unsure_checks
    FROM latest WHERE NOT human GROUP BY ALL
)
SELECT q.benchmark, q.item_id, q.recipe, q.lang, q.qtype, q.question,
       coalesce(p.corrected_answer, q.answer) AS answer, q.context, q.documents, q.used_pairs,
       q.status, q.reason,
       CASE WHEN q.status <> 'ok' THEN q.status
            WHEN p.verdict = 'pass' THEN 'accepted_review'
            WHEN p.verdict = 'fail' THEN 'rejected_review'
            WHEN len(coalesce(m.failed_checks, [])) > 0 THEN 'flagged'
            WHEN m.item_id IS NULL OR len(coalesce(m.unsure_checks, [])) > 0 THEN 'unchecked'
            ELSE 'unreviewed' END AS qc_status,
       coalesce(m.failed_checks, []) AS failed_checks,
       coalesce(m.unsure_checks, []) AS unsure_checks,
       p.reviewer
FROM qa_items q
LEFT JOIN people p USING (benchmark, item_id)
LEFT JOIN machine m USING (benchmark, item_id);
