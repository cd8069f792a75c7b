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
#
# The program's world is its own. The recorder keeps no descriptor open: each write
# opens its file by path, writes and closes it again, with the interpreter's lock held
# throughout (libc's open/write/close through ctypes.PyDLL), so that no other Python
# thread can close, reuse or dup2 onto the number meanwhile, and the program's own
# files get the numbers they get untraced. It takes a sys.monitoring tool id the
# program sees as free, and gives it up when the program asks for it (moving to another
# free id, or stopping with a note). Where it cannot go on, it stops and says why in
# notes-PID.txt; the program runs on.
#
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
    import operator
    import struct
    import weakref
    import _thread

    mon = sys.monitoring
    now = __import__("time").monotonic_ns
    pid0 = os.getpid()

    # Writing without keeping a descriptor: open by path, write, close, the GIL held.
    O_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
    O_CREATE = O_APPEND | os.O_CREAT | os.O_TRUNC
    try:
        import ctypes

        libc = ctypes.PyDLL(None, use_errno=True)
        c_open = libc.open
        c_open.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.c_uint)
        c_open.restype = ctypes.c_int
        c_write = libc.write
        c_write.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
        c_write.restype = ctypes.c_ssize_t
        c_close = libc.close
        c_close.argtypes = (ctypes.c_int,)
        c_close.restype = ctypes.c_int

        def address(data):
            # Of a bytes object or of the mapped buffer.
            if isinstance(data, bytes):
                return ctypes.cast(data, ctypes.c_void_p).value
            return ctypes.addressof(ctypes.c_char.from_buffer(data))

        def append(path, data, at=0, n=None, flags=O_APPEND):
            n = len(data) - at if n is None else n
            fd = c_open(path, flags, 0o600)
            if fd < 0:
                raise OSError(ctypes.get_errno(), "open", os.fsdecode(path))
            try:
                ptr = address(data) + at
                while n > 0:
                    w = c_write(fd, ptr, n)
                    if w < 0:
                        e = ctypes.get_errno()
                        if e == 4:  # EINTR
                            continue
                        raise OSError(e, "write", os.fsdecode(path))
                    ptr += w
                    n -= w
            finally:
                c_close(fd)

    except (ImportError, OSError, AttributeError):
        # No ctypes (a minimal build): the same without the lock held across the calls.
        def append(path, data, at=0, n=None, flags=O_APPEND):
            n = len(data) - at if n is None else n
            fd = os.open(path, flags, 0o600)
            try:
                view = memoryview(data)[at : at + n]
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)

    def note(pid, why):
        # Why this process's lines stop or never started, for the trace to say (one
        # line: time, reason); the program is not told and goes on.
        try:
            line = f"{now()}\t{why}\n".encode("utf-8", "backslashreplace")
            append(os.fsencode(os.path.join(folder, f"notes-{pid}.txt")), line, flags=O_APPEND | os.O_CREAT)
        except Exception:
            pass

    # The program's view of sys.monitoring is the untraced one: the recorder's tool id
    # looks free, and when the program asks for it the recorder moves to another free
    # id (or, with none left, stops and says so) before the program gets it.
    real = {
        n: getattr(mon, n)
        for n in (
            "get_tool",
            "use_tool_id",
            "free_tool_id",
            "register_callback",
            "get_events",
            "set_events",
            "get_local_events",
            "set_local_events",
            "clear_tool_id",
        )
        if hasattr(mon, n)
    }

    def free_id(avoid):
        # The profiler's id last: cProfile and other profilers take it.
        for t in (4, 3, 5, 1, 0, mon.PROFILER_ID):
            if t != avoid and real["get_tool"](t) is None:
                return t
        return None

    tool = [free_id(None)]
    if tool[0] is None:
        note(pid0, "every sys.monitoring tool id was in use at start-up: no lines recorded")
        return
    # At most this many records (21 bytes each): past it the recorder stops, says so
    # with a record of its own, and the rest of the run has no Python lines. alloclab
    # checks the variable before the run and passes a plain number.
    try:
        limit = int(os.environ.get("ALLOCLAB_PYTHON_MAX_RECORDS", "50000000"))
    except ValueError:
        limit = 50000000
    record = struct.Struct("<BIQIi")
    rsize = record.size
    # One slice of the buffer per live thread (a thread writes only its own slice, so
    # that no lock is taken per record: threads switch inside callbacks); threads past
    # the slices' number share the last one under a lock. Private: a forked child gets
    # its own copy, not the parent's buffer. 16 KiB a slice: 128 pages touched at start.
    slices = 32
    per = rsize * 780
    buf = mmap.mmap(-1, per * slices, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for at in range(0, per * slices, mmap.PAGESIZE):
        buf[at] = 0  # touched now, not while the program runs
    free = list(range(slices - 1))
    shared_lock = _thread.allocate_lock()
    table_lock = _thread.allocate_lock()
    # The two files (records, code table) by path; code-table lines wait in `pending`
    # and go out before any records that could name them.
    paths = [None, None]
    pending = []
    active = [False]
    count = [0]
    codes = {}
    tid_of = _thread.get_native_id
    pack = record.pack_into
    local = _thread._local()
    live = weakref.WeakValueDictionary()  # slice -> its Slice, while its thread lives

    gen = [0]  # a forked child's slices are not its parent's

    def write_codes():
        with table_lock:
            if not pending:
                return
            data = b"".join(pending)
            pending.clear()
        append(paths[1], data)

    class Slice:
        __slots__ = ("index", "start", "n", "gen", "pid", "__weakref__")

        def __init__(self, index):
            self.index = index
            self.start = index * per
            self.n = 0
            self.gen = gen[0]
            self.pid = os.getpid()

        def flush(self):
            # Emptied before the write: a second flush of the slice meanwhile (the exit
            # handler's) writes nothing twice.
            n = self.n
            self.n = 0
            if paths[0] is None:
                return
            write_codes()
            if n:
                append(paths[0], buf, self.start, n)

        def __del__(self):
            # The thread ended: its records out, its slice free for another thread.
            # Not in a forked child, where the parent's other threads' slices are
            # freed before the child's files are its own.
            if self.gen != gen[0] or self.pid != os.getpid():
                return
            try:
                self.flush()
            except Exception:
                pass
            if self.index != slices - 1:
                free.append(self.index)

    def open_files():
        pid = os.getpid()
        paths[0] = os.fsencode(os.path.join(folder, f"lines-{pid}.bin"))
        paths[1] = os.fsencode(os.path.join(folder, f"codes-{pid}.tsv"))
        append(paths[0], b"", flags=O_CREATE)
        append(paths[1], b"", flags=O_CREATE)

    try:
        open_files()
    except OSError as e:
        note(pid0, f"the recorder's files could not be made ({e}): no lines recorded")
        return

    # os.fsencode without its Python frame (str.encode is C: no event of its own).
    fs_encoding = sys.getfilesystemencoding()
    fs_errors = sys.getfilesystemencodeerrors()

    def clean(text):
        return text.replace(b"\t", b" ").replace(b"\n", b" ")

    def code_index(code):
        i = codes.get(code)
        if i is None:
            # The file name as the bytes the file system has (a name that is not UTF-8
            # is kept as it is, not refused).
            with table_lock:
                i = codes.get(code)
                if i is None:
                    i = len(codes)
                    name = clean(code.co_qualname.encode("utf-8", "backslashreplace"))
                    file = clean(code.co_filename.encode(fs_encoding, fs_errors))
                    pending.append(b"%d\t%d\t%s\t%s\n" % (i, code.co_firstlineno, name, file))
                    codes[code] = i
        return i

    def write(sl, kind, i, line):
        if sl.n + rsize > per:
            sl.flush()
        count[0] += 1
        if count[0] > limit and kind != 3:
            real["set_events"](tool[0], 0)
            active[0] = False
            kind = 4
        pack(buf, sl.start + sl.n, kind, tid_of(), now(), i, line)
        sl.n += rsize

    def halt(why):
        # The recorder stops where it cannot go on; the program goes on untouched. A
        # record marks when (the trace counts later events as after the recorder) and
        # the notes say why.
        active[0] = False
        try:
            if tool[0] is not None:
                real["set_events"](tool[0], 0)
        except Exception:
            pass
        try:
            with shared_lock:
                write(shared, 6, 0, 0)
        except Exception:
            pass
        note(os.getpid(), why)

    def put(kind, code, line):
        # Not while this thread is inside the recorder: Python code the recorder calls
        # (the standard library's) is not the program's, and must not re-enter it.
        if not active[0] or getattr(local, "busy", False):
            return
        local.busy = True
        try:
            put_unchecked(kind, code, line)
        except OSError as e:
            # The folder went away (a full disk): recording stops, the program goes on.
            halt(f"the recorder could not write its records ({e})")
        except Exception as e:
            # A failure of the recorder's own is never the program's.
            halt(f"the recorder failed ({type(e).__name__}: {e})")
        finally:
            local.busy = False

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
    CALLBACKS = [(E.LINE, on_line), (E.PY_START, on_start), (E.PY_RESUME, on_start)]
    CALLBACKS += [(E.PY_THROW, on_throw), (E.PY_RETURN, on_leave), (E.PY_YIELD, on_leave)]
    CALLBACKS += [(E.PY_UNWIND, on_unwind)]

    def attach(t):
        real["use_tool_id"](t, "alloclab")
        for e, f in CALLBACKS:
            real["register_callback"](t, e, f)
        tool[0] = t

    def detach(t):
        # Before 3.14 freeing an id leaves its events and callbacks in place: cleared
        # here, so that none of the recorder's stays on an id the program takes.
        real["set_events"](t, 0)
        for e, _ in CALLBACKS:
            real["register_callback"](t, e, None)
        real["free_tool_id"](t)

    attach(tool[0])

    # sys.monitoring as the program sees it: on the recorder's id, each function does
    # what it does on a free id (the same errors, checked by the real functions where
    # they check arguments); on any other id, the real function itself.
    index = operator.index
    waiting = {}  # callbacks the program registered for the recorder's id before using it

    def ours(tool_id):
        return tool[0] is not None and index(tool_id) == tool[0]

    def get_tool(tool_id, /):
        if ours(tool_id):
            return None
        return real["get_tool"](tool_id)

    def use_tool_id(tool_id, name, /):
        if ours(tool_id):
            if not isinstance(name, str):
                raise ValueError("tool name must be a str")
            t = tool[0]
            give_way()
            for e, f in waiting.items():
                real["register_callback"](t, e, f)
            waiting.clear()
        return real["use_tool_id"](tool_id, name)

    def give_way():
        # The program asks for the recorder's id: the recorder moves to a free one with
        # its events, or stops where none is free.
        old = tool[0]
        events = real["get_events"](old)
        new = free_id(old)
        if new is None:
            halt(f"the program took sys.monitoring tool id {old} and every other id was in use: its lines stop there")
            tool[0] = None
        else:
            attach(new)
            real["set_events"](new, events)
        detach(old)

    def free_tool_id(tool_id, /):
        if ours(tool_id):
            return None
        return real["free_tool_id"](tool_id)

    def register_callback(tool_id, event, func, /):
        if ours(tool_id):
            t = tool[0]
            # The event checked as the real function checks it (ours swapped out and
            # back), the program's callback kept for when it takes the id.
            mine = real["register_callback"](t, event, None)
            real["register_callback"](t, event, mine)
            old = waiting.get(event)
            waiting[event] = func
            return old
        return real["register_callback"](tool_id, event, func)

    def get_events(tool_id, /):
        if ours(tool_id):
            return 0
        return real["get_events"](tool_id)

    def set_events(tool_id, event_set, /):
        if ours(tool_id):
            t = tool[0]
            current = real["get_events"](t)
            real["set_events"](t, event_set)  # its own check of the set
            real["set_events"](t, current)
            raise ValueError(f"tool {t} is not in use")
        return real["set_events"](tool_id, event_set)

    def get_local_events(tool_id, code, /):
        if ours(tool_id):
            real["get_local_events"](tool[0], code)  # its own check of the code
            return 0
        return real["get_local_events"](tool_id, code)

    def set_local_events(tool_id, code, event_set, /):
        if ours(tool_id):
            t = tool[0]
            current = real["get_local_events"](t, code)
            real["set_local_events"](t, code, event_set)
            real["set_local_events"](t, code, current)
            raise ValueError(f"tool {t} is not in use")
        return real["set_local_events"](tool_id, code, event_set)

    def clear_tool_id(tool_id, /):
        if ours(tool_id):
            return None
        return real["clear_tool_id"](tool_id)

    for f in (
        get_tool,
        use_tool_id,
        free_tool_id,
        register_callback,
        get_events,
        set_events,
        get_local_events,
        set_local_events,
        clear_tool_id,
    ):
        if f.__name__ in real:
            f.__qualname__ = f.__name__
            f.__module__ = "sys.monitoring"
            f.__doc__ = real[f.__name__].__doc__
            setattr(mon, f.__name__, f)

    def finish():
        # The last of the exit handlers (registered first): what the interpreter does
        # after it (module teardown, native libraries' exit code) has no Python line.
        if paths[0] is None:
            return
        try:
            if tool[0] is not None:
                real["set_events"](tool[0], 0)
            active[0] = True
            put(3, finish.__code__, 0)
            active[0] = False
            for sl in list(live.values()) + [shared]:
                sl.flush()
            with table_lock:
                pending.append(b"end\n")
            write_codes()
        except Exception:
            pass
        paths[0] = paths[1] = None

    def in_child():
        # A forked child: its own files and code table, none of the parent's records,
        # one thread (the others are gone), and the stack it was forked in (outermost
        # first) as its first records.
        nonlocal shared_lock, table_lock
        if tool[0] is None or paths[0] is None:
            return
        was = active[0]
        active[0] = False
        real["set_events"](tool[0], 0)
        shared_lock = _thread.allocate_lock()
        table_lock = _thread.allocate_lock()
        gen[0] += 1
        for sl in list(live.values()) + [shared]:
            sl.n = 0
        live.clear()
        shared.gen = gen[0]
        free[:] = list(range(slices - 1))
        local.s = None
        local.busy = False
        codes.clear()
        pending.clear()
        try:
            open_files()
        except OSError as e:
            paths[0] = paths[1] = None
            note(os.getpid(), f"the recorder's files could not be made ({e}): no lines recorded")
            return
        if not was:
            # The parent's recorder had stopped: the child's stops at once, for the
            # same reason.
            halt("the recorder of the process it was forked from had stopped")
            return
        active[0] = True
        frames = []
        f = sys._getframe(1)
        while f is not None:
            frames.append(f)
            f = f.f_back
        for f in reversed(frames):
            if f.f_code.co_filename != __file__:
                put(1, f.f_code, f.f_code.co_firstlineno)
                put(5, f.f_code, f.f_lineno)  # where it is, not a line started
        real["set_events"](tool[0], EVENTS)

    os.register_at_fork(after_in_child=in_child)
    # os._exit skips the exit handlers (multiprocessing's forked workers end so): the
    # records are written first — only once the call is one that exits (a status the
    # real os._exit refuses raises its own error and the recorder goes on).
    real_exit = os._exit

    def _exit(status, /):
        code = index(status)
        if -(2**31) <= code < 2**31:
            finish()
        real_exit(status)

    _exit.__name__ = _exit.__qualname__ = "_exit"
    _exit.__module__ = real_exit.__module__
    _exit.__doc__ = real_exit.__doc__
    os._exit = _exit
    atexit.register(finish)
    active[0] = True
    real["set_events"](tool[0], EVENTS)


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
