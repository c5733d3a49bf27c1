"""The CLIR (CLIRMatrix) recipe's pure logic: labels, projection, splits, padding and export.

Plain functions without warehouse or Prefect dependencies; the flows wire them
into stages. The recipe's open decisions live in ``tasks.pairing.config``."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "ClirConfig": "config",
    "export_collection": "publish",
    "validate_export": "export",
})
