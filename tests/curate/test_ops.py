"""Parallel.stream: results in order, a bounded window handed to the map at a time."""

from hypothesis import example, given, strategies as st

from curate.ops import Parallel, serial_map


@given(items=st.integers(0, 40), width=st.integers(1, 6))
@example(items=0, width=1)  # nothing: the map is never called
@example(items=4, width=2)  # exactly one full window
def test_stream_hands_over_bounded_windows_in_order(items, width):
    pulled, windows = [], []

    def source():
        for i in range(items):
            pulled.append(i)
            yield i

    def recording_map(fn, *iterables):
        windows.append(len(iterables[0]))
        # Nothing beyond this window has been taken from the source yet.
        assert len(pulled) == sum(windows)
        return serial_map(fn, *iterables)

    out = list(Parallel(recording_map, width).stream(lambda i: i * i, source()))
    assert out == [i * i for i in range(items)]
    assert all(w == 2 * width for w in windows[:-1]) and all(0 < w <= 2 * width for w in windows)
    assert sum(windows) == items
