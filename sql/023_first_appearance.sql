-- When each article first appeared: the dump dates of each language's wiki whose documents were ingested, and the
-- earliest of them in which an article (namespace 0, not a redirect) was seen, once by page id and once by title.
-- A moved page keeps its id, so it keeps its date; a page deleted and recreated under the same title keeps the
-- title's date.  The earliest ingested dump of a wiki gives only "on or before" (view document_dates).
CREATE TABLE appearance_dumps (
    lang        VARCHAR NOT NULL,
    dump_date   DATE NOT NULL,
    PRIMARY KEY (lang, dump_date)
);

CREATE TABLE first_seen (
    lang        VARCHAR NOT NULL,
    key_kind    VARCHAR NOT NULL CHECK (key_kind IN ('page_id', 'title')),
    key         VARCHAR NOT NULL,
    dump_date   DATE NOT NULL,
    PRIMARY KEY (lang, key_kind, key)
);
