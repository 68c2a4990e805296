import sys


def main():
    print('cli', sys.argv[1:])
