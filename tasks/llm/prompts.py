"""Prompt templates: Jinja2 files in ``tasks/llm/templates/<name>.j2``, and a recipe's own as ``<recipe>:<name>``.

A recipe of another package ships its templates in a package of its own
(:attr:`tasks.recipe.Recipe.templates`); ``mc:answer_mc`` is ``answer_mc.j2``
there, loaded only when asked for.

Prompts live in files so that changing one is a visible diff and changes the
fingerprint of the stages that use it (:func:`template_hash`).  Undefined
variables are errors: a prompt silently missing its question would still be
sent, paid for and cached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from tasks.errors import ConfigError
from tasks.llm.registry import ModelSpec
from tasks.llm.types import ChatMessage, LLMRequest, ResponseFormat

SUFFIX = ".j2"


class _RecipeTemplates(Mapping[str, jinja2.BaseLoader]):
    """The template packages of the recipes that have one, by recipe name, each looked up when first asked for."""

    def __getitem__(self, name: str) -> jinja2.BaseLoader:
        from tasks.recipe import RECIPES  # recipes are plugins, loaded by name

        if name not in RECIPES.names() or RECIPES.get(name).templates is None:
            raise KeyError(name)
        return _package_loader(RECIPES.get(name).templates)

    def __iter__(self) -> Iterator[str]:
        from tasks.recipe import recipes

        return iter([r.name for r in recipes() if r.templates is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


@cache
def _package_loader(package: str) -> jinja2.BaseLoader:
    return jinja2.FileSystemLoader(str(resources.files(package)))


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader([jinja2.PackageLoader("tasks.llm", "templates"),
                                    jinja2.PrefixLoader(_RecipeTemplates(), delimiter=":")]),  # type: ignore[arg-type]
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # prompts are plain text, not HTML
    )


def recipe_templates(recipe: str) -> list[str]:
    """The names (``<recipe>:<name>``) of the templates a recipe ships; none for a recipe that uses the core's."""
    try:
        loader = _RecipeTemplates()[recipe]
    except KeyError:
        return []
    return sorted(f"{recipe}:{n.removesuffix(SUFFIX)}" for n in loader.list_templates() if n.endswith(SUFFIX))


def _file_name(name: str) -> str:
    return name if name.endswith(SUFFIX) else name + SUFFIX


def template_source(name: str) -> str:
    """The text of template ``name`` (with or without its ``.j2`` suffix)."""
    environment = _environment()
    try:
        source, _, _ = environment.loader.get_source(environment, _file_name(name))  # type: ignore[union-attr]
    except jinja2.TemplateNotFound:
        known = ", ".join(available_templates()) or "none"
        raise ConfigError(f"no prompt template {name!r} in tasks/llm/templates or a recipe's (known: {known})") from None
    return source


def template_hash(name: str) -> str:
    """sha256 of the template's text, for stage fingerprints (templates it includes are not covered)."""
    return hashlib.sha256(template_source(name).encode("utf-8")).hexdigest()


def render(name: str, **variables: Any) -> str:
    """The template filled in; a missing variable or a syntax error is a ConfigError naming the template."""
    file_name = _file_name(name)
    template_source(name)  # a clear error for an unknown name
    try:
        return _environment().get_template(file_name).render(**variables)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"prompt template {file_name} line {exc.lineno}: {exc.message}") from None
    except jinja2.UndefinedError as exc:
        raise ConfigError(f"prompt template {file_name}: {exc.message}") from None


def available_templates() -> list[str]:
    return sorted(n.removesuffix(SUFFIX) for n in _environment().list_templates(extensions=[SUFFIX.lstrip(".")]))


def prompt_request(
    spec: ModelSpec, template: str, *, max_tokens: int, stop: tuple[str, ...] | None = None, seed: int | None = None,
    temperature: float = 0.0, response_format: ResponseFormat | None = None, **variables: Any,
) -> LLMRequest:
    """One step's request for ``spec``: the rendered template as a prompt, or as the user message of a chat.

    Templates are written to work both ways: an instruction followed by worked
    examples and an open slot that a base model continues and a chat model
    answers.  ``chat`` is passed to the template so it can drop the open slot's
    trailing label for chat models, which answer better without it.
    ``response_format``: the JSON schema the reply must follow, where the
    backend can enforce one (:mod:`tasks.llm.verdicts`).
    """
    text = render(template, chat=spec.mode == "chat", **variables)
    common: dict[str, Any] = {"max_tokens": max_tokens, "stop": stop, "seed": seed, "temperature": temperature,
                              "response_format": response_format}
    if spec.mode == "chat":
        return LLMRequest(messages=(ChatMessage(role="user", content=text),), **common)
    return LLMRequest(prompt=text, **common)
