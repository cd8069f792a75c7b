# A Python program of the lab's tests: four threads that switch often (a busy loop each),
# each making a 40 MiB buffer (mmap under glibc) every 50,000 iterations on one line. The
# recorder must count that line exactly 4 times per thread, neither doubling nor losing
# records when threads switch inside its callbacks.
import threading


def spin():
    for i in range(200_000):
        x = i * 2
        if i % 50_000 == 0:
            b = bytearray(40 << 20)  # THREAD-BUFFER
            del b


threads = [threading.Thread(target=spin) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
