"""QA benchmark construction: ECLEKTIC and XRAG items, their quality control and review."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "EclekticConfig": "eclektic",
    "QcConfig": "qc",
    "XragConfig": "xrag_config",
    "benchmark_definition": "policy",
    "export_sheet": "review",
    "import_decisions": "review",
    "live_release": "live",
    "live_months": "live",
    "newest_month": "live",
    "parse_window": "window",
    "require_qid_coverage": "eclektic",
})
