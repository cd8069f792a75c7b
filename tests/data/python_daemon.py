# A daemon-style program of the lab's tests: it closes every descriptor it inherited (as
# daemons do with os.closerange), then writes its log through the first free one while it
# runs many lines, so that the line recorder flushes its records after the close. Traced,
# its log must be byte for byte the untraced one, at the same descriptor number.
import os
import sys


def entry(i):
    return f"entry {i}: " + "x" * (i % 17) + "\n"


def main():
    entry(0)  # every function the loop runs is known before the close
    os.closerange(3, 4096)
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    print(fd, flush=True)
    for i in range(30000):
        os.write(fd, entry(i).encode())
    os.close(fd)


main()
