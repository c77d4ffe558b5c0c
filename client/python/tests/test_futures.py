"""Futures: GIL release, callbacks, buffer lifetime, memory over many calls."""

import gc
import os
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np

import ps_client


def _blocked_sync_pull(cluster):
    """Worker 0 pushed and clocked step 0; worker 1 has not, so worker 0's
    pull of the sync table waits until worker 1 clocks. Returns
    (worker0, worker1, pending future)."""
    a = ps_client.connect(cluster.client_config_path, worker_index=0)
    b = ps_client.connect(cluster.client_config_path, worker_index=1)
    a.push_dense("s", np.ones(8, np.float32)).wait()
    a.clock()
    return a, b, a.pull_dense("s")


def _release(b):
    b.push_dense("s", np.full(8, 3.0, np.float32)).wait()
    b.clock()


def test_other_thread_runs_while_one_waits(cluster):
    a, b, future = _blocked_sync_pull(cluster)
    result = {}

    def waiter():
        result["values"] = future.wait()

    thread = threading.Thread(target=waiter)
    thread.start()
    # The waiter is inside wait() (GIL released): this thread keeps running
    # Python code meanwhile.
    count = 0
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        count += 1
    assert thread.is_alive() and not future.done()
    assert count > 10000, count
    _release(b)
    thread.join(10)
    # Step 0: mean of (1, 3) over the two workers, SGD lr 1 on zeros.
    np.testing.assert_array_equal(result["values"], np.full(8, -2.0))
    a.close()
    b.close()


def test_done_callback_runs_once_with_the_future(cluster):
    a, b, future = _blocked_sync_pull(cluster)
    calls = []
    done = threading.Event()

    def callback(f):
        calls.append((f, threading.get_ident(), f.done()))
        done.set()

    future.add_done_callback(callback)
    assert not calls
    _release(b)
    assert done.wait(10)
    assert calls[0][0] is future and calls[0][2]
    np.testing.assert_array_equal(calls[0][0].wait(), np.full(8, -2.0))
    # Registered after completion: runs at once, in this thread.
    future.add_done_callback(callback)
    assert len(calls) == 2 and calls[1][1] == threading.get_ident()
    a.close()
    b.close()


def test_raising_callback_goes_to_unraisablehook(cluster):
    seen = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda info: seen.append(info)
    try:
        with ps_client.connect(cluster.client_config_path) as client:
            future = client.pull_dense("w")
            future.add_done_callback(lambda f: 1 / 0)
            future.wait()
            after = client.pull_dense("w")
            after.add_done_callback(lambda f: 1 / 0)
            assert after.wait().shape == (10,)  # the client still works
            deadline = time.monotonic() + 10
            while len(seen) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        sys.unraisablehook = old_hook
    assert len(seen) == 2
    assert all(isinstance(i.exc_value, ZeroDivisionError) for i in seen)


def test_raising_callback_does_not_crash_the_interpreter(cluster):
    # In a fresh interpreter: callbacks raising on the client's background
    # thread and on a waiting thread; the process exits normally.
    script = f"""
import numpy as np, threading, ps_client
a = ps_client.connect({cluster.client_config_path!r}, worker_index=0)
b = ps_client.connect({cluster.client_config_path!r}, worker_index=1)
a.push_dense("s", np.ones(8, np.float32)).wait()
a.clock()
f = a.pull_dense("s")
def boom(f):
    raise RuntimeError("boom")
f.add_done_callback(boom)
b.push_dense("s", np.ones(8, np.float32)).wait()
b.clock()
print("values", f.wait()[0], flush=True)
a.close(); b.close()
print("survived", flush=True)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    assert "values -1.0" in run.stdout and "survived" in run.stdout
    assert "RuntimeError: boom" in run.stderr


def test_exit_with_an_open_client_and_a_pending_callback(cluster):
    # The pull waits for a step that never completes (worker 1 never joins);
    # the interpreter exits without closing anything: atexit closes the
    # client, the pull is cancelled and its callback runs before
    # finalization.
    script = f"""
import numpy as np, ps_client
a = ps_client.connect({cluster.client_config_path!r}, worker_index=0)
a.push_dense("s", np.ones(8, np.float32)).wait()
a.clock()
f = a.pull_dense("s")
f.add_done_callback(lambda f: print("callback", type(f.exception()).__name__,
                                    flush=True))
print("exiting", flush=True)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["exiting", "callback Cancelled"]


def test_dropped_future_keeps_its_out_buffer_alive(cluster):
    a, b, _ = _blocked_sync_pull(cluster)
    out = np.zeros(8, np.float32)
    before = sys.getrefcount(out)
    future = a.pull_dense("s", out=out)
    del future  # in flight: the request still writes into `out`
    gc.collect()
    assert sys.getrefcount(out) > before
    _release(b)
    a.pull_dense("s").wait()  # later than the dropped one on the same shard
    deadline = time.monotonic() + 10
    while sys.getrefcount(out) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sys.getrefcount(out) == before
    np.testing.assert_array_equal(out, np.full(8, -2.0))
    a.close()
    b.close()


def test_dropped_allocating_pull_keeps_its_result_alive(cluster):
    # The binding allocates the result (numpy memory, traced by tracemalloc
    # in numpy's domain): it must outlive a future dropped in flight and be
    # freed once the request completes.
    def numpy_bytes():
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
        return sum(t.size for t in snapshot.traces)

    a, b, _ = _blocked_sync_pull(cluster)
    tracemalloc.start()
    try:
        future = a.pull_dense("s")
        del future  # in flight: the request still writes into the result
        gc.collect()
        assert numpy_bytes() >= 8 * 4
        _release(b)
        a.pull_dense("s", out=np.zeros(8, np.float32)).wait()
        deadline = time.monotonic() + 10
        while numpy_bytes() > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert numpy_bytes() == 0
    finally:
        tracemalloc.stop()
    a.close()
    b.close()


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# Stated bound: 100,000 calls (allocated results, futures, callbacks, failed
# calls) grow the RSS by less than 16 MiB after a 10,000-call warm-up; a
# leak of one 64-byte result per call would be 6 MiB of arrays plus their
# objects, one leaked future per call well over 16 MiB.
RSS_BOUND = 16 << 20


def test_100k_calls_do_not_grow_rss(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        w = client.get_table("w")
        grads = np.ones(10, np.float32)

        def calls(n):
            for i in range(n):
                if i % 4 == 0:
                    client.push_dense(w, grads).wait()
                elif i % 4 == 1:
                    f = client.pull_dense(w)
                    f.add_done_callback(lambda f: None)
                    f.wait()
                elif i % 4 == 2:
                    client.pull_sparse("e", [i, i + 1]).wait()
                else:
                    try:
                        client.pull_dense(w, offset=9, count=2).wait()
                    except ps_client.OutOfRange:
                        pass

        calls(10000)
        gc.collect()
        before = _rss_bytes()
        calls(100000)
        gc.collect()
        growth = _rss_bytes() - before
        print(f"RSS growth over 100,000 calls: {growth / 2**20:.2f} MiB")
        assert growth < RSS_BOUND
