try:
    open("data/nope.csv")
except FileNotFoundError as e:
    print("missing:", e.filename)
