"""Published datasets read into the tables built benchmarks use, so everything downstream treats them alike."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "IMPORTERS": "common",
    "import_cell": "common",
    "import_dataset": "common",
    "import_responses": "responses",
    "import_verdicts": "verdicts",
})
