"""What the report and `curate inspect` compare, from a manifest."""

from rich.console import Console

from curate.report import qdc
from curate.report.terminal import qdc_tables
from tests.curate.report import stand_in

RUN = {"settings": {"sample": 500},
       "input": {"rows": 1000, "distinct_1": 0.2, "compression_ratio": 3.1, "self_bleu": 20.0, "ngrams": {"1": 9}},
       "output": {"rows": 600, "distinct_1": 0.3, "compression_ratio": 2.5, "self_bleu": 12.0, "vendi": 40.0}}


def test_the_runs_own_metrics_come_first_with_every_metric_of_either_side():
    steps = [{"step": "01_dataset_metrics", "op": "dataset_metrics", "summary": {"distinct_1": 0.1}}]
    first, second = qdc.comparisons(stand_in.manifest(steps, dataset_metrics=RUN))
    assert first.labels == ("input (1,000 rows)", "output (600 rows)")
    assert first.before == {"distinct_1": 0.2, "self_bleu": 20.0, "compression_ratio": 3.1}
    assert qdc.metric_names(first) == ["distinct_1", "self_bleu", "compression_ratio", "vendi"]  # vendi: output only
    assert second.title == "dataset metrics at 01_dataset_metrics"
    assert qdc.comparisons(stand_in.manifest()) == []


def test_inspect_tables_show_a_metric_only_one_side_has():
    console = Console(width=200, record=True)
    for table in qdc_tables(stand_in.manifest(dataset_metrics=RUN)):
        console.print(table)
    text = console.export_text()
    assert "output (600 rows)" in text
    vendi = next(line for line in text.splitlines() if "vendi" in line)
    assert "40" in vendi
