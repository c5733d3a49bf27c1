"""Distractor documents for XRAG items: on topic, retrieved for the question, but not answering it."""

from tasks.distractors.config import DistractorConfig, DistractorQuery
from tasks.distractors.select import AnswerCheck, select_distractors

__all__ = ["AnswerCheck", "DistractorConfig", "DistractorQuery", "select_distractors"]
