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
# The program's world is its own. The recorder's two files are kept at the highest free
# descriptor numbers below the soft limit, out of the way of the numbers the program
# opens (the lowest free ones), and close-on-exec; before each write the descriptor is
# checked to still be the recorder's file (device and inode), and the file is opened
# again by its path where it is not (a daemon's os.closerange, a dup2 onto it): a number
# that is no longer the recorder's is never written to nor closed. It takes a
# sys.monitoring tool id the program sees as free, and gives it up when the program asks
# for it (moving to another free id, or stopping with a note). Where it cannot go on, it
# stops and says why in notes-PID.txt; the program runs on.
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

    # The recorder's files: descriptors at the highest free numbers, checked before use.
    O_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 4096
    except (ImportError, OSError, ValueError):
        soft = 1024
    top = min(soft, 4096) - 1
    try:
        import ctypes

        # libc's own calls with the interpreter's lock held (PyDLL): no other Python
        # thread runs inside them.
        libc = ctypes.PyDLL(None, use_errno=True)
        c_write = libc.write
        c_write.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
        c_write.restype = ctypes.c_ssize_t
        stat_buf = None
        if os.uname().machine == "x86_64":
            c_fstat = libc.fstat
            c_fstat.argtypes = (ctypes.c_int, ctypes.c_void_p)
            c_fstat.restype = ctypes.c_int
            stat_buf = ctypes.create_string_buffer(256)

        def identity(fd):
            if stat_buf is None:
                st = os.fstat(fd)
                return (st.st_dev, st.st_ino)
            if c_fstat(fd, stat_buf) != 0:
                raise OSError(ctypes.get_errno(), "fstat")
            # x86_64's struct stat: st_dev, then st_ino, 8 bytes each.
            return struct.unpack_from("<QQ", stat_buf)

        def address(data):
            # Of a bytes object or of the mapped buffer.
            if isinstance(data, bytes):
                return ctypes.cast(data, ctypes.c_void_p).value
            return ctypes.addressof(ctypes.c_char.from_buffer(data))

        def write_all(fd, data, at, n):
            ptr = address(data) + at
            while n > 0:
                w = c_write(fd, ptr, n)
                if w < 0:
                    e = ctypes.get_errno()
                    if e == 4:  # EINTR
                        continue
                    raise OSError(e, "write")
                ptr += w
                n -= w

    except (ImportError, OSError, AttributeError):
        # No ctypes (a minimal build): os's calls.
        def identity(fd):
            st = os.fstat(fd)
            return (st.st_dev, st.st_ino)

        def write_all(fd, data, at, n):
            view = memoryview(data)[at : at + n]
            while view:
                view = view[os.write(fd, view) :]

    import fcntl

    def high(fd):
        # The highest free number below the soft limit, out of the program's way (it
        # gets the lowest free ones): F_DUPFD gives the lowest free at or above a floor.
        for floor in range(top, max(top - 512, 2), -1):
            try:
                moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, floor)
            except OSError:
                continue
            os.close(fd)
            return moved
        return fd

    class Sink:
        """One of the recorder's files, by path and by the descriptor it was opened at."""

        __slots__ = ("path", "fd", "ident")

        def __init__(self, path, flags):
            self.path = path
            self.fd = None
            self.ident = None
            self.reopen(flags)

        def reopen(self, flags=O_APPEND):
            fd = high(os.open(self.path, flags, 0o600))
            self.fd, self.ident = fd, identity(fd)

        def ours(self):
            if self.fd is None:
                return False
            try:
                return identity(self.fd) == self.ident
            except OSError:
                return False

        def write(self, data, at=0, n=None):
            if not self.ours():
                # Closed or reused by the program: its number is left alone.
                self.reopen()
            write_all(self.fd, data, at, len(data) - at if n is None else n)

        def close(self):
            if self.ours():
                os.close(self.fd)
            self.fd = None

    def append(path, data):
        # A one-off write (the notes): opened, written, closed.
        fd = os.open(path, O_APPEND | os.O_CREAT, 0o600)
        try:
            write_all(fd, data, 0, len(data))
        finally:
            os.close(fd)

    def note(pid, why):
        # Why this process's lines stop or never started, for the trace to say (one
        # line: time, reason); the program is not told and goes on.
        try:
            line = f"{now()}\t{why}\n".encode("utf-8", "backslashreplace")
            append(os.path.join(folder, f"notes-{pid}.txt"), line)
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
    # The two files (records, code table); code-table lines wait in `pending` and go out
    # before any records that could name them.
    sinks = [None, None]
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
        sinks[1].write(data)

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
            if sinks[0] is None:
                return
            write_codes()
            if n:
                sinks[0].write(buf, self.start, n)

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
        # Files of their own per process, and per program a process runs: an image
        # exec'd into the same pid writes lines-PID.1.bin, not over its predecessor's.
        pid = os.getpid()
        k = 0
        while True:
            stem = str(pid) if k == 0 else f"{pid}.{k}"
            try:
                sinks[0] = Sink(os.path.join(folder, f"lines-{stem}.bin"), O_APPEND | os.O_CREAT | os.O_EXCL)
                break
            except FileExistsError:
                k += 1
        sinks[1] = Sink(os.path.join(folder, f"codes-{stem}.tsv"), O_APPEND | os.O_CREAT | os.O_TRUNC)

    def close_files():
        for i in (0, 1):
            if sinks[i] is not None:
                sinks[i].close()
                sinks[i] = None

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

    # The program's own callbacks on an id the recorder takes (registering on a free id
    # is allowed): put back when the recorder leaves it, given as the program's meanwhile.
    displaced = {}

    def attach(t):
        real["use_tool_id"](t, "alloclab")
        kept = {}
        for e, f in CALLBACKS:
            old = real["register_callback"](t, e, f)
            if old is not None:
                kept[e] = old
        displaced.clear()
        displaced.update(kept)
        tool[0] = t

    def detach(t):
        # Before 3.14 freeing an id leaves its events and callbacks in place: cleared
        # here (the program's own put back), so that none of the recorder's stays on an
        # id the program takes.
        real["set_events"](t, 0)
        for e, _ in CALLBACKS:
            real["register_callback"](t, e, displaced.pop(e, None))
        for e, f in displaced.items():
            real["register_callback"](t, e, f)
        displaced.clear()
        real["free_tool_id"](t)

    attach(tool[0])

    # sys.monitoring as the program sees it: on the recorder's id, each function does
    # what it does on a free id (the same errors, checked by the real functions where
    # they check arguments); any other call — another id, keywords, a wrong number of
    # arguments — is the real function's own.
    index = operator.index

    def ours(args, kwargs, n):
        # Whether this is a well-formed call on the recorder's id.
        if kwargs or len(args) != n or tool[0] is None:
            return False
        return index(args[0]) == tool[0]

    def get_tool(*args, **kwargs):
        if ours(args, kwargs, 1):
            return None
        return real["get_tool"](*args, **kwargs)

    def use_tool_id(*args, **kwargs):
        if ours(args, kwargs, 2):
            if not isinstance(args[1], str):
                raise ValueError("tool name must be a str")
            give_way()
        return real["use_tool_id"](*args, **kwargs)

    def give_way():
        # The program asks for the recorder's id: the recorder moves to a free one with
        # its events, or stops where none is free; the program's callbacks on the id
        # are there for it.
        old = tool[0]
        events = real["get_events"](old)
        new = free_id(old)
        program_old = dict(displaced)
        if new is None:
            halt(f"the program took sys.monitoring tool id {old} and every other id was in use: its lines stop there")
            tool[0] = None
            detach(old)
            return
        real["set_events"](old, 0)
        attach(new)
        program_new = dict(displaced)
        real["set_events"](new, events)
        displaced.clear()
        displaced.update(program_old)
        detach(old)
        displaced.update(program_new)

    def free_tool_id(*args, **kwargs):
        if ours(args, kwargs, 1):
            return None
        return real["free_tool_id"](*args, **kwargs)

    def register_callback(*args, **kwargs):
        if ours(args, kwargs, 3):
            t, event, func = tool[0], args[1], args[2]
            # The event checked as the real function checks it (ours swapped out and
            # back); the program's callback kept for when it takes the id.
            mine = real["register_callback"](t, event, None)
            real["register_callback"](t, event, mine)
            old = displaced.get(event)
            if func is None:
                displaced.pop(event, None)
            else:
                displaced[event] = func
            return old
        return real["register_callback"](*args, **kwargs)

    def get_events(*args, **kwargs):
        if ours(args, kwargs, 1):
            return 0
        return real["get_events"](*args, **kwargs)

    def set_events(*args, **kwargs):
        if ours(args, kwargs, 2):
            t = tool[0]
            current = real["get_events"](t)
            real["set_events"](t, args[1])  # its own check of the set
            real["set_events"](t, current)
            raise ValueError(f"tool {t} is not in use")
        return real["set_events"](*args, **kwargs)

    def get_local_events(*args, **kwargs):
        if ours(args, kwargs, 2):
            real["get_local_events"](tool[0], args[1])  # its own check of the code
            return 0
        return real["get_local_events"](*args, **kwargs)

    def set_local_events(*args, **kwargs):
        if ours(args, kwargs, 3):
            t = tool[0]
            current = real["get_local_events"](t, args[1])
            real["set_local_events"](t, args[1], args[2])
            real["set_local_events"](t, args[1], current)
            raise ValueError(f"tool {t} is not in use")
        return real["set_local_events"](*args, **kwargs)

    def clear_tool_id(*args, **kwargs):
        if ours(args, kwargs, 1):
            return None
        return real["clear_tool_id"](*args, **kwargs)

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

    def write_out():
        # Every slice's records and the code table out, with the stop record: what an
        # exit (or an exec) leaves is whole.
        if tool[0] is not None:
            real["set_events"](tool[0], 0)
        was = active[0]
        active[0] = True
        put(3, finish.__code__, 0)
        active[0] = False
        for sl in list(live.values()) + [shared]:
            sl.flush()
        return was

    def finish():
        # The last of the exit handlers (registered first): what the interpreter does
        # after it (module teardown, native libraries' exit code) has no Python line.
        if sinks[0] is None:
            return
        try:
            write_out()
            with table_lock:
                pending.append(b"end\n")
            write_codes()
        except Exception:
            pass
        close_files()

    def in_child():
        # A forked child: its own files and code table, none of the parent's records,
        # one thread (the others are gone), and the stack it was forked in (outermost
        # first) as its first records.
        nonlocal shared_lock, table_lock
        if tool[0] is None or sinks[0] is None:
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
        # The parent's descriptors, inherited: closed (only where they are still the
        # recorder's files) before the child's own are made.
        close_files()
        try:
            open_files()
        except OSError as e:
            close_files()
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
    # records are written first — only when the call is one that exits (a plain int in
    # range; anything else goes to the real os._exit untouched, whose own error the
    # program then gets, the recorder going on).
    real_exit = os._exit

    def _exit(*args, **kwargs):
        status = kwargs.get("status", args[0] if args else None)
        if type(status) is int and -(2**31) <= status < 2**31 and len(args) + len(kwargs) == 1:
            finish()
        real_exit(*args, **kwargs)

    # An exec replaces the program: its records are written first; where the exec fails
    # the recorder goes on in the same files.
    def exec_wrapper(real_exec):
        def exec_(*args, **kwargs):
            recording = False
            if sinks[0] is not None:
                try:
                    recording = write_out()
                    write_codes()
                except Exception:
                    pass
            try:
                return real_exec(*args, **kwargs)
            finally:
                # Only reached where the exec failed.
                if recording and tool[0] is not None:
                    active[0] = True
                    real["set_events"](tool[0], EVENTS)

        exec_.__name__ = exec_.__qualname__ = real_exec.__name__
        exec_.__module__ = real_exec.__module__
        exec_.__doc__ = real_exec.__doc__
        return exec_

    for name in ("execv", "execve"):
        if hasattr(os, name):
            setattr(os, name, exec_wrapper(getattr(os, name)))
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
