"""`curate ablate`: proof by training. Equal-token proxy language models (a transformers config,
a plain torch loop, several seeds) trained on two or more datasets ("arms") and compared on
held-out bits per byte and multiple-choice likelihoods, with a paired test over seeds.

Layout: arms.py (what an arm is), data.py (one tokenizer, the equal-token sample, held-out
text), model.py (presets and configs), train.py (the loop, checkpoints), evaluate.py (bpb,
multiple choice), stats.py (paired t-test, bootstrap, verdicts), results.py (ablation.json, the
table, the HTML page), run.py (the whole ablation), command.py (the Typer command).
torch and transformers are imported inside functions only, so `curate --help` stays fast.
"""
