"""The fits' memory budget: the recipe's memory_gb, else a share of the machine's memory."""

from curate import memory


def test_budget_is_the_recipes_else_a_share_of_the_machine():
    assert memory.budget_gb(3.0) == 3.0
    assert 0 < memory.budget_gb(None) == memory.DEFAULT_SHARE * memory.machine_gb()
    assert memory.describe(3.0) == "3 GB (the recipe's memory_gb)"
    assert "default" in memory.describe(None)


def test_a_cgroup_limit_below_the_machine_bounds_it(monkeypatch, tmp_path):
    limit = tmp_path / "memory.max"
    limit.write_text(str(2**30) + "\n")
    real = memory.Path

    monkeypatch.setattr(memory, "Path", lambda p: limit if p == "/sys/fs/cgroup/memory.max" else real(p))
    assert memory.machine_gb() == 1.0
    limit.write_text("max\n")
    assert memory.machine_gb() > 0
