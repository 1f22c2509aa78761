from __future__ import annotations

from django.db import models


class LLMCall(models.Model):
    """The call cache of the chat client (evalsite.llm.cache): one successful answer per
    (model, messages, parameters), so a re-run of a generation or a judgement costs nothing and reads the same."""

    key = models.CharField(max_length=64, unique=True, help_text="sha256 of model, messages and parameters.")
    model = models.CharField(max_length=300)
    text = models.TextField()
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=50, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        # The table keeps the name it had in goldenset (goldenset migration 0009).
        db_table = "goldenset_llmcall"
        verbose_name = "LLM call"

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"
