# alloclab's Python line recorder, put first on PYTHONPATH by `alloclab trace -- python …`
# (it is not part of the user's program and edits nothing of it).
#
# With sys.monitoring (PEP 669, CPython 3.12+) it writes one record per line started,
# per Python frame entered (call, resume of a generator, throw into one) and per frame
# left (return, yield, unwind by an exception): kind, native thread id, CLOCK_MONOTONIC
# time in ns (the clock `perf record -k mono` stamps samples with), code and line. The
# lab replays them per thread to know each thread's Python stack, with each frame's line,
# at the time of every fault and memory syscall perf recorded.
#
# Records go to a buffer mapped and touched once at start and are written out with
# write(2) whenever it fills and at exit, so that recording allocates no heap memory of
# its own as it goes (the calls it would make would be counted as the program's).
# Then the interpreter's own sitecustomize, if any, is imported as if this one were not
# here.
import sys


def _alloclab_record():
    import os

    folder = os.environ.get("ALLOCLAB_PYTHON_LINES")
    if not folder or sys.version_info < (3, 12) or sys.implementation.name != "cpython":
        return
    import atexit
    import mmap
    import struct
    import _thread

    mon = sys.monitoring
    tool = None
    for t in (mon.PROFILER_ID, 3, 4, 5):
        if mon.get_tool(t) is None:
            tool = t
            break
    if tool is None:
        return
    mon.use_tool_id(tool, "alloclab")
    pid = os.getpid()
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
        out = os.open(os.path.join(folder, f"lines-{pid}.bin"), flags, 0o600)
        table = os.open(os.path.join(folder, f"codes-{pid}.tsv"), flags, 0o600)
    except OSError:
        mon.free_tool_id(tool)
        return
    record = struct.Struct("<BIQIi")
    size = record.size * 65536
    buf = mmap.mmap(-1, size)
    for at in range(0, size, mmap.PAGESIZE):
        buf[at] = 0  # touched now, not while the program runs
    # At most this many records (21 bytes each): past it the recorder stops, says so
    # with a record of its own, and the rest of the run has no Python lines.
    limit = int(os.environ.get("ALLOCLAB_PYTHON_MAX_RECORDS", "50000000"))
    state = [0, 0]  # bytes in the buffer, records written
    codes = {}
    now = __import__("time").monotonic_ns
    tid_of = _thread.get_native_id
    pack = record.pack_into
    rsize = record.size

    def flush():
        n = state[0]
        if n:
            os.write(out, buf[:n])
            state[0] = 0

    def put(kind, code, line):
        i = codes.get(code)
        if i is None:
            # The code's name goes to the table at once, so that the records already
            # written can be read even if the process never reaches its exit handlers.
            i = codes[code] = len(codes)
            name = code.co_qualname.replace("\t", " ").replace("\n", " ")
            file = code.co_filename.replace("\t", " ").replace("\n", " ")
            os.write(table, f"{i}\t{code.co_firstlineno}\t{name}\t{file}\n".encode())
        n = state[0]
        if n + rsize > size:
            flush()
            n = 0
        state[1] += 1
        if state[1] > limit and kind != 3:
            mon.set_events(tool, 0)
            kind = 4
        pack(buf, n, kind, tid_of(), now(), i, line)
        state[0] = n + rsize

    def on_line(code, line):
        put(0, code, line)

    def on_enter(code, offset, *_):
        put(1, code, code.co_firstlineno)

    def on_leave(code, offset, *_):
        put(2, code, 0)

    E = mon.events
    mon.register_callback(tool, E.LINE, on_line)
    for e in (E.PY_START, E.PY_RESUME, E.PY_THROW):
        mon.register_callback(tool, e, on_enter)
    for e in (E.PY_RETURN, E.PY_YIELD, E.PY_UNWIND):
        mon.register_callback(tool, e, on_leave)

    def finish():
        # The last of the exit handlers (registered first): what the interpreter does
        # after it (module teardown, native libraries' exit code) has no Python line.
        mon.set_events(tool, 0)
        put(3, finish.__code__, 0)
        flush()
        os.close(out)
        os.write(table, b"end\n")
        os.close(table)

    atexit.register(finish)
    mon.set_events(
        tool,
        E.LINE | E.PY_START | E.PY_RESUME | E.PY_THROW | E.PY_RETURN | E.PY_YIELD | E.PY_UNWIND,
    )


def _alloclab_chain():
    # The interpreter's own sitecustomize (Debian ships one), found past this folder.
    import importlib.machinery
    import importlib.util
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _alloclab_record()
finally:
    _alloclab_chain()
