"""Per-response heuristic features (MIRAGE-BENCH): a registry by name; each feature its own stage cell."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "feature_names": "compute",
    "graded_features": "compute",
    "FeatureModels": "models",
    "TEMPLATES": "grades",
    "score_feature_files": "from_files",
})
