"""Judging stored responses: each judge's verdict on each response is a ``judgements`` row."""
