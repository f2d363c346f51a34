"""Serves the OKR API, or runs one of its admin commands: python app.py --help."""
from okr.__main__ import main

if __name__ == "__main__":
    main()
