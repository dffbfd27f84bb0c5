"""The agent: ingests a conversation into a memory and answers questions with an LLM."""

from himga.agent._agent import PROMPT_TEMPLATES, Answer, BaseAgent, NoLLMError, prompt_hashes

__all__ = ["PROMPT_TEMPLATES", "Answer", "BaseAgent", "NoLLMError", "prompt_hashes"]
