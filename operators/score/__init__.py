"""Quality, diversity and complexity (QDC) scores, dataset metrics and balanced selection."""
