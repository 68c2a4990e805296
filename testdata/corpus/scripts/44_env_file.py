# differs: the sandbox refuses to read .env (the file tools' rule); project mode is no sandbox
print(open(".env").read().split("=")[0])
