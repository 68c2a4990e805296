import glob
print(sorted(glob.glob("**/*.md", recursive=True)))
