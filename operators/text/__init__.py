"""Text transforms that keep every row: PII redaction, token counts."""
