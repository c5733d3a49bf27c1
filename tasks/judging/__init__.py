"""Judging stored responses: each judge's verdict on each response is a ``judgements`` row."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "JudgeConfig": "pointwise",
})
