"""The CLIR (CLIRMatrix) recipe's pure logic: labels, projection, splits, padding and export.

Plain functions without warehouse or Prefect dependencies; the flows wire them
into stages. The recipe's open decisions live in ``tasks.pairing.config``.
"""
