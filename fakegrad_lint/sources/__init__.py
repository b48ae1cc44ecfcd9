"""Sources: what a file is before the analysis sees it.

- ``kind.py``: source kinds (a Python file, a notebook) behind one interface,
  so the engine has one path for all; add a kind there;
- ``sourcefile.py``: lossless reading (encodings, BOM, newlines) and atomic writing;
- ``text.py``: the one newline convention, line splitting and index, quiet parse;
- ``notebook/``: Jupyter notebooks (format, IPython masking, cells <-> program);
- ``lazyparse.py``: function bodies parsed when the analysis first reads them.
"""
