"""The RAG arena (MIRAGE-BENCH): pairwise battles between systems turned into ratings with intervals."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "ArenaConfig": "battles",
    "DEFAULT_METHOD": "rating",
    "OrderedVerdict": "pairwise",
    "RATING_METHODS": "rating",
    "Ties": "bradley_terry",
    "agreement_text": "pairwise",
    "best_first": "table",
    "evaluation_run": "report",
    "judge_agreement": "pairwise",
    "judging_estimate": "battles",
    "log_report": "report",
    "rating_order": "table",
    "rating_text": "table",
    "ratings": "bradley_terry",
    "ratings_table": "table",
    "window_tables": "table",
    "read_battles": "bradley_terry",
    "write_report": "report",
})
