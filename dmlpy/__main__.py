"""`python -m dmlpy`: what a bug report needs (dmlpy/cli/info.py); also the `dmlpy-info` command."""

import sys

from .cli.info import main

if __name__ == "__main__":
    sys.exit(main())
