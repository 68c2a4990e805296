# writes
from hermes_tools import write_file
write_file("out/summary.txt", "total: 42\n")
print(open("out/summary.txt").read().strip())
