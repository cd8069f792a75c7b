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
# write(2) whenever a thread's slice fills and at exit, so that recording makes no
# memory syscall of its own as it goes and allocates little (a small object per thread
# and per new code object): what it did would be counted as the program's.
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
    import weakref
    import _thread

    mon = sys.monitoring
    # A free tool id, the profiler's last: cProfile and other profilers take it.
    tool = None
    for t in (4, 3, 5, mon.PROFILER_ID):
        if mon.get_tool(t) is None:
            tool = t
            break
    if tool is None:
        return
    # At most this many records (21 bytes each): past it the recorder stops, says so
    # with a record of its own, and the rest of the run has no Python lines.
    try:
        limit = int(os.environ.get("ALLOCLAB_PYTHON_MAX_RECORDS", "50000000"))
    except ValueError:
        limit = 50000000
    record = struct.Struct("<BIQIi")
    rsize = record.size
    # One slice of the buffer per live thread (a thread writes only its own slice, so
    # that no lock is taken per record: threads switch inside callbacks); threads past
    # the slices' number share the last one under a lock. Private: a forked child gets
    # its own copy, not the parent's buffer.
    slices = 32
    per = rsize * 3072
    buf = mmap.mmap(-1, per * slices, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for at in range(0, per * slices, mmap.PAGESIZE):
        buf[at] = 0  # touched now, not while the program runs
    view = memoryview(buf)
    free = list(range(slices - 1))
    shared_lock = _thread.allocate_lock()
    table_lock = _thread.allocate_lock()
    # files: [records, code table]; count: [records written]
    files = [None, None]
    count = [0]
    codes = {}
    now = __import__("time").monotonic_ns
    tid_of = _thread.get_native_id
    pack = record.pack_into
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_APPEND
    local = _thread._local()
    live = weakref.WeakValueDictionary()  # slice -> its Slice, while its thread lives

    gen = [0]  # a forked child's slices are not its parent's

    class Slice:
        __slots__ = ("index", "start", "n", "gen", "pid", "__weakref__")

        def __init__(self, index):
            self.index = index
            self.start = index * per
            self.n = 0
            self.gen = gen[0]
            self.pid = os.getpid()

        def flush(self):
            # Emptied before the write, which lets other threads run: a second flush
            # of the slice meanwhile (the exit handler's) writes nothing twice.
            n = self.n
            self.n = 0
            if n and files[0] is not None:
                os.write(files[0], view[self.start : self.start + n])

        def __del__(self):
            # The thread ended: its records out, its slice free for another thread.
            # Not in a forked child, where the parent's other threads' slices are
            # freed before the child's files are its own.
            if self.gen != gen[0] or self.pid != os.getpid():
                return
            try:
                self.flush()
            except OSError:
                pass
            if self.index != slices - 1:
                free.append(self.index)

    def open_files():
        pid = os.getpid()
        files[0] = os.open(os.path.join(folder, f"lines-{pid}.bin"), flags, 0o600)
        files[1] = os.open(os.path.join(folder, f"codes-{pid}.tsv"), flags, 0o600)

    try:
        open_files()
    except OSError:
        return
    mon.use_tool_id(tool, "alloclab")

    def code_index(code):
        i = codes.get(code)
        if i is None:
            # The code's name goes to the table at once, so that the records already
            # written can be read even if the process never reaches its exit handlers.
            with table_lock:
                i = codes.get(code)
                if i is None:
                    i = len(codes)
                    name = code.co_qualname.replace("\t", " ").replace("\n", " ")
                    file = code.co_filename.replace("\t", " ").replace("\n", " ")
                    line = f"{i}\t{code.co_firstlineno}\t{name}\t{file}\n"
                    os.write(files[1], line.encode())
                    codes[code] = i
        return i

    def write(sl, kind, i, line):
        if sl.n + rsize > per:
            sl.flush()
        count[0] += 1
        if count[0] > limit and kind != 3:
            mon.set_events(tool, 0)
            kind = 4
        pack(buf, sl.start + sl.n, kind, tid_of(), now(), i, line)
        sl.n += rsize

    def put(kind, code, line):
        if files[1] is None:
            return
        try:
            put_unchecked(kind, code, line)
        except OSError:
            # The folder went away (a full disk): recording stops, the program goes on.
            mon.set_events(tool, 0)
            files[0] = files[1] = None

    def put_unchecked(kind, code, line):
        i = code_index(code)
        sl = getattr(local, "s", None)
        if sl is None:
            try:
                sl = Slice(free.pop())
                live[sl.index] = sl
            except IndexError:
                sl = False
            local.s = sl
        if sl:
            write(sl, kind, i, line)
        else:
            with shared_lock:
                write(shared, kind, i, line)

    shared = Slice(slices - 1)

    # The recorder's own code is not the program's: its events are switched off where
    # they can be (DISABLE, once per place), skipped where not. Without that, a thread's
    # end (its slice's __del__) would record itself into a new slice.
    own = __file__
    DISABLE = mon.DISABLE

    def on_line(code, line):
        if code.co_filename == own:
            return DISABLE
        put(0, code, line)

    def on_start(code, offset):
        if code.co_filename == own:
            return DISABLE
        put(1, code, code.co_firstlineno)

    def on_throw(code, offset, exc):
        if code.co_filename != own:
            put(1, code, code.co_firstlineno)

    def on_leave(code, offset, value):
        if code.co_filename == own:
            return DISABLE
        put(2, code, 0)

    def on_unwind(code, offset, exc):
        if code.co_filename != own:
            put(2, code, 0)

    E = mon.events
    EVENTS = E.LINE | E.PY_START | E.PY_RESUME | E.PY_THROW | E.PY_RETURN | E.PY_YIELD | E.PY_UNWIND
    mon.register_callback(tool, E.LINE, on_line)
    for e in (E.PY_START, E.PY_RESUME):
        mon.register_callback(tool, e, on_start)
    mon.register_callback(tool, E.PY_THROW, on_throw)
    for e in (E.PY_RETURN, E.PY_YIELD):
        mon.register_callback(tool, e, on_leave)
    mon.register_callback(tool, E.PY_UNWIND, on_unwind)

    def finish():
        # The last of the exit handlers (registered first): what the interpreter does
        # after it (module teardown, native libraries' exit code) has no Python line.
        if files[0] is None:
            return
        mon.set_events(tool, 0)
        put(3, finish.__code__, 0)
        for sl in list(live.values()) + [shared]:
            sl.flush()
        os.close(files[0])
        os.write(files[1], b"end\n")
        os.close(files[1])
        files[0] = files[1] = None

    def in_child():
        # A forked child: its own files and code table, none of the parent's records,
        # one thread (the others are gone), and the stack it was forked in (outermost
        # first) as its first records.
        nonlocal shared_lock, table_lock
        mon.set_events(tool, 0)
        shared_lock = _thread.allocate_lock()
        table_lock = _thread.allocate_lock()
        os.close(files[0])
        os.close(files[1])
        gen[0] += 1
        for sl in list(live.values()) + [shared]:
            sl.n = 0
        live.clear()
        shared.gen = gen[0]
        free[:] = list(range(slices - 1))
        local.s = None
        codes.clear()
        files[0] = files[1] = None
        try:
            open_files()
        except OSError:
            files[0] = files[1] = None
            return
        frames = []
        f = sys._getframe(1)
        while f is not None:
            frames.append(f)
            f = f.f_back
        for f in reversed(frames):
            if f.f_code.co_filename != __file__:
                put(1, f.f_code, f.f_code.co_firstlineno)
                put(5, f.f_code, f.f_lineno)  # where it is, not a line started
        mon.set_events(tool, EVENTS)

    os.register_at_fork(after_in_child=in_child)
    # os._exit skips the exit handlers (multiprocessing's forked workers end so): the
    # records are written first.
    real_exit = os._exit

    def _exit(status):
        finish()
        real_exit(status)

    os._exit = _exit
    atexit.register(finish)
    mon.set_events(tool, EVENTS)


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
