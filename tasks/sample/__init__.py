"""tasks.sample: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "qa_summary": "report",
    "leaderboard_summary": "report",
    "judge_summary": "report",
    "corpus_summary": "report",
    "collection_summary": "report",
    "arena_summary": "report",
    "build_sample_mirror": "mirror",
    "build_live_mirror": "mirror",
    "EARLIER_DATE": "mirror",
    "window_summary": "report",
    "load_questions": "xrag_sample",
    "write_xrag_sample": "xrag_sample",
})
