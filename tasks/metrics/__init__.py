"""Scores of benchmark runs: ranking metrics per query, and bootstrap intervals over queries."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "ScoringConfig": "leaderboard",
    "failed_responses": "leaderboard",
    "judge_agreement": "agreement",
    "pooled_window_rows": "live",
    "score_eclektic_file": "eclektic",
    "score_files": "mkqa",
    "score_xrag_file": "xrag_file",
})
