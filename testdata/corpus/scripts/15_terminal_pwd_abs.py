import os
from hermes_tools import terminal
pwd = terminal("pwd")["output"].strip()
print(pwd == os.getcwd(), open(os.path.join(pwd, "notes/ideas.txt")).read().split())
