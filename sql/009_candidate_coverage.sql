-- ECLEKTIC: the other chosen languages each candidate's "no equivalent" check
-- covered (every one had sitelinks or QIDs in the warehouse when it ran);
-- NULL on rows written before this column existed.
ALTER TABLE qa_candidates ADD COLUMN checked_langs VARCHAR[];
