# writes
from hermes_tools import patch
r = patch(path="src/inventory/__init__.py", old_string='VERSION = "3.0"', new_string='VERSION = "3.1"')
print(r.get("success"), open("src/inventory/__init__.py").read().splitlines()[-1])
