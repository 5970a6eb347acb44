"""File checks shared by the task loaders: the file exists, and its text is read whatever its byte order mark.

The benchmarks' files are UTF-8 (the GLUE download's MRPC files start with a UTF-8 byte order mark). A file
saved again by another tool may be UTF-16 or UTF-32 with a byte order mark (Excel's "Unicode text", Windows
Notepad): that is read. One in a legacy code page (Windows-1252, Latin-1) cannot be told apart from UTF-8 for
sure, so it is refused with the file, the line and the bytes found, and how to convert it.
"""

import codecs
from pathlib import Path

# Longest first: the UTF-32 little-endian mark begins with the UTF-16 one.
BYTE_ORDER_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
                    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def existing_file(path, layout):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; expected {layout}.")
    return path


def read_text(path):
    """The text of `path`: UTF-8, or UTF-8/16/32 with a byte order mark; a ValueError naming the file, the
    line and the bytes when it is anything else."""
    path = Path(path)
    data = path.read_bytes()
    for mark, encoding in BYTE_ORDER_MARKS:
        if data.startswith(mark):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError as error:
                raise ValueError(f"{path} starts with a {encoding.upper()} byte order mark but is not valid "
                                 f"{encoding.upper()} {_where(data, error)}.") from error
    first_nul = data.find(b"\x00", 0, 4096)
    if first_nul >= 0:
        raise ValueError(f"{path} holds NUL bytes (the first at byte {first_nul}): UTF-16 or UTF-32 "
                         "text without a byte order mark, or not text at all. Save it as UTF-8.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8: {_where(data, error)}. The benchmark files are UTF-8; this one looks like a "
            "legacy code page such as Windows-1252 or Latin-1 (a spreadsheet's export?). Convert it, e.g. "
            f"`iconv -f cp1252 -t utf-8 {path.name} > {path.stem}.utf8{path.suffix}`.") from error


def _where(data, error):
    line = data.count(b"\n", 0, error.start) + 1
    line_start = data.rfind(b"\n", 0, error.start) + 1
    bad = data[error.start:error.end]
    context = data[max(line_start, error.start - 20):error.start + 20]
    return (f"byte 0x{bad[0]:02x} at line {line}, column {error.start - line_start + 1} "
            f"({context.decode('utf-8', errors='backslashreplace')!r})")
