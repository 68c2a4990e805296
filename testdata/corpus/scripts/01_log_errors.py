errors = [l for l in open("logs/app.log") if " ERROR " in l]
print(len(errors), "errors; first:", errors[0].strip())
