"""Integrations of FlashIR's attention with other frameworks
(``transformers``: HuggingFace transformers' attention interface)."""
