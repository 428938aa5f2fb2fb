"""`python -m loopfix`: the same command line as the `loopfix` script."""

from loopfix.cli import main

main()
