# A program of the lab's tests that uses sys.monitoring's tool ids itself, as coverage
# tools and profilers do: `take` takes every id (0-5) and frees them again, `free` frees
# every id without taking one. Traced, it must print and do what it does untraced.
import sys

m = sys.monitoring
if sys.argv[1] == "take":
    for i in range(6):
        m.use_tool_id(i, f"tool{i}")
    print([m.get_tool(i) for i in range(6)])
    for i in range(6):
        m.free_tool_id(i)
else:
    print([m.get_tool(i) for i in range(6)])
    for i in range(6):
        m.free_tool_id(i)
total = 0
for i in range(1000):
    total += i  # AFTER
print(total, [m.get_tool(i) for i in range(6)])
