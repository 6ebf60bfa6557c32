"""Runs `work(index)` on several threads that start together (a barrier), and returns what they raised: the
launch path's thread tests (tests/test_native_launch.py, tests/test_gpu_native_launch.py) drive one table or one
kernel from many threads at once, as bench/load_test.py does."""
import threading


def run_together(count, work):
    """Calls `work(index)` for index in range(count), each on its own thread, all released at once; returns the
    exceptions raised (an empty list when every thread finished)."""
    start, errors = threading.Barrier(count), []

    def body(index):
        start.wait()
        try:
            work(index)
        except Exception as e:          # noqa: BLE001 (returned to the test, which says it)
            errors.append(e)
    pool = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors
