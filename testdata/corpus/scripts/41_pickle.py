# writes
import pickle
state = {"seen": sorted(open("notes/ideas.txt").read().split()), "n": 2}
pickle.dump(state, open("state.pkl", "wb"))
print(pickle.load(open("state.pkl", "rb")))
