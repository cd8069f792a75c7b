# A program of the lab's tests that does what a traced program may do to descriptors,
# sys.monitoring and os._exit; traced, it must print and write what it does untraced.
#   dup2 LOG     a thread makes new functions (the recorder writes its code table) while
#                the main thread dup2s the log onto high numbers and onto 4, writes it
#                and closes them, threads switching as often as they can
#   numbers LOG  takes descriptors 950-1023, opens two files and says their numbers,
#                then writes into every descriptor from 3 to 1099
#   api          sys.monitoring called as a program may, errors included
#   exit         os._exit with a status it refuses, then goes on
#   exec         runs lines, then execs itself (the same pid) to run more
import os
import sys
import threading

mode = sys.argv[1]
if mode == "dup2":
    fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    stop = []

    def make():
        i = 0
        while not stop and i < 3000:
            ns = {}
            exec(compile(f"def f{i}():\n    return {i}\n", f"gen{i}", "exec"), ns)
            ns[f"f{i}"]()
            i += 1

    t = threading.Thread(target=make)
    t.start()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can
    for i in range(5000):
        os.dup2(fd, 960)
        os.dup2(fd, 961)
        os.dup2(fd, 4)
        os.write(4, b"B %d\n" % i)
        os.close(960)
        os.close(961)
        os.close(4)
    stop.append(1)
    t.join()
    os.close(fd)
elif mode == "numbers":
    fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for n in range(950, 1024):
        os.dup2(fd, n)

    def fresh():
        return 1

    fresh()
    a = os.open("/dev/null", os.O_RDONLY)
    b = os.open("/dev/null", os.O_RDONLY)
    print(a, b)
    for n in range(3, 1100):
        try:
            os.write(n, b"x")
        except OSError:
            pass
elif mode == "api":
    m = sys.monitoring

    def attempt(f, *args):
        try:
            print(f.__name__, args[:1], "->", f(*args))
        except Exception as e:
            print(f.__name__, args[:1], "!!", type(e).__name__, e)

    code = attempt.__code__
    for i in range(6):
        attempt(m.get_tool, i)
    attempt(m.get_tool, 4.0)
    attempt(m.get_tool, 7)
    attempt(m.register_callback, 4, 3, print)
    attempt(m.register_callback, 4, 1 << 30, print)
    attempt(m.get_events, 4)
    attempt(m.set_events, 4, 1)
    attempt(m.set_events, 4, 1 << 30)
    attempt(m.get_local_events, 4, 5)
    attempt(m.get_local_events, 4, code)
    attempt(m.set_local_events, 4, code, 0)
    attempt(m.free_tool_id, 4)
    attempt(m.use_tool_id, 4, 5)
    attempt(m.use_tool_id, 4, "mine")
    attempt(m.get_tool, 4)
    attempt(m.register_callback, 4, m.events.CALL, print)
    attempt(m.free_tool_id, 4)
elif mode == "exit":
    try:
        os._exit("nope")
    except TypeError as e:
        print("refused:", e)
    blocks = [bytearray(1 << 20) for _ in range(8)]  # AFTER-EXIT
    print(len(blocks))
elif mode == "exec":
    total = 0
    for i in range(2000):
        total += i  # BEFORE-EXEC
    os.execv(sys.executable, [sys.executable, __file__, "execed"])
elif mode == "execed":
    print(sum(range(100)))  # AFTER-EXEC
