import sys
print("checking")
sys.exit(3 if open("logs/old.log").read().count("ERROR") else 0)
