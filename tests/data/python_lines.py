# A Python program of the lab's tests (no NumPy): `alloclab trace` must put each memory
# syscall of it at the line below that made it. 40 MiB is above glibc's largest mmap
# threshold (32 MiB), so that every such buffer is mmapped and munmapped, on the main
# thread and on a second one.
import sys
import threading

SIZE = 40 << 20


def churn(rounds):
    for _ in range(rounds):
        buf = bytearray(SIZE)  # MAIN-MMAP
        del buf  # MAIN-MUNMAP


def dropped():
    # Freed when the frame is torn down after its return: charged to this function's
    # last line, not to the caller's.
    buf = bytearray(SIZE)  # TEARDOWN-MMAP
    return len(buf)  # TEARDOWN-LAST


def worker(rounds):
    for _ in range(rounds):
        other = bytearray(SIZE)  # THREAD-MMAP
        del other  # THREAD-MUNMAP


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    churn(rounds)
    for _ in range(rounds):
        dropped()  # TEARDOWN-CALLER
    t = threading.Thread(target=worker, args=(rounds,))
    t.start()
    t.join()


main()
