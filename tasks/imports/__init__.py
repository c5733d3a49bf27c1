"""Published datasets read into the tables built benchmarks use, so everything downstream treats them alike."""
