"""tasks.inference: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "InferenceConfig": "prompting",
    "check_gold_readers": "gold",
})
