#!/usr/bin/env python3
"""The shader dump tool of a checkout: the installed `dmlpy-dump-shaders`, run on this
checkout's dmlpy. Its help, options and exit status are dmlpy/cli/dump_shaders.py's.

    python tools/dump_shaders.py relu_grad --dtype float16 --sizes 2,3,4
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dmlpy.cli.dump_shaders import build_desc, build_parser, main, operator_options

__all__ = ["build_desc", "build_parser", "main", "operator_options"]

if __name__ == "__main__":
    sys.exit(main())
