"""`python -m node` is the same as the `node` console script."""

from node.cli import main

if __name__ == "__main__":
    main()
