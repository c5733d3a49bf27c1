"""The RAG arena (MIRAGE-BENCH): pairwise battles between systems turned into ratings with intervals."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "ArenaConfig": "battles",
    "DEFAULT_METHOD": "rating",
    "OrderedVerdict": "pairwise",
    "RATING_METHODS": "rating",
    "Ties": "bradley_terry",
    "agreement_text": "pairwise",
    "best_first": "report",
    "evaluation_run": "report",
    "judge_agreement": "pairwise",
    "judging_estimate": "battles",
    "log_report": "report",
    "rating_order": "bradley_terry",
    "rating_text": "bradley_terry",
    "ratings": "bradley_terry",
    "read_battles": "bradley_terry",
    "write_report": "report",
})
