"""Dataset containment across a data lake (R2D2), behind `curate lake`. Not an operator: it
works on whole tables of a lake, not on a recipe's stream, so it lives beside `operators/`.

scan:    tables.py (discovery, fingerprints) -> stats.py + stats_cache.py (footer statistics,
         cached) -> schema_index.py (step 1) -> minmax.py (step 2) -> content.py (step 3)
         -> verify.py (step 4); scan.py runs them, scan_output.py writes the results.
         CSV columns are text, compared with other columns on canonical values (text.py).
plan:    planner.py (HiGHS integer program, greedy fallback), plan_file.py.
apply:   apply.py moves tables to quarantine.py after rebuild.py proves they rebuild exactly.
restore: restore.py. The commands are in cli.py (registered as `curate lake` through the
         `curate.commands` entry points); the tests' ground truth is tests/lake/brute_force.py.
"""
