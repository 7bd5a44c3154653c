"""`curate report RUN_DIR`: one self-contained report.html of what a run did (report.py)."""
