"""LLM providers: the `provider:model` spec, key redaction, retries and backoff, usage counting, and
one module per provider wire (OpenAI and compatible servers, Ollama, Anthropic).

May import: `wikirag.settings`, `wikirag.errors`. Nothing else in wikirag.
"""
