"""dmlpy's command-line tools: `python -m dmlpy` (what a bug report needs, info.py) and
`dmlpy-dump-shaders` (the shader a desc becomes, dump_shaders.py).

The top layer: it may import anything in dmlpy, and nothing in dmlpy imports it.
"""
