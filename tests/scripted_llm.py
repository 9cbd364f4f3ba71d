"""The scripted OpenAI-compatible endpoint for tests; it lives in `evals.scripted_endpoint`."""

from evals.scripted_endpoint import Rule, ScriptedLLM, last_user_text

__all__ = ["Rule", "ScriptedLLM", "last_user_text"]
