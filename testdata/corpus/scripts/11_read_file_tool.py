from hermes_tools import read_file
r = read_file("README.md")
print(r["total_lines"], r["content"].splitlines()[0])
