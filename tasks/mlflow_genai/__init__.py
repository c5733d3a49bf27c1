"""Evaluations where MLflow 3 shows them: responses and battles as traces with their verdicts as assessments,
benchmarks as evaluation datasets, prompt templates in the prompt registry, one evaluation run per model."""

from tasks.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "DEFAULT_PER_LANGUAGE": "sample",
    "RUN_TYPE": "runs",
    "TraceSample": "sample",
    "battles_traces": "battles",
    "evaluation_dataset": "datasets",
    "link_templates": "prompts",
    "log_model_evaluation": "runs",
    "run_templates": "prompts",
    "show_features": "features",
    "write_traces": "traces",
})
