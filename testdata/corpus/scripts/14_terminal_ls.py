from hermes_tools import terminal
print(sorted(terminal("ls data")["output"].split()))
