"""Seeded sampling and shuffling of rows."""
