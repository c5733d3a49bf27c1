"""tasks.text: see its modules."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "OVERRIDES_ENV": "languages",
    "WikiLang": "codes",
    "reload_rules": "languages",
    "rule_for": "languages",
})
