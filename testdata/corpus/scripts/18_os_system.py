import os
status = os.system("echo system says hi")
print("status", status)
