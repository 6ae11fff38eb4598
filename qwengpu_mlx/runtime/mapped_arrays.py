"""An ``.npz`` file's arrays read in place: the file memory-mapped, each array a read-only
view of its bytes.

A cold ``run`` reads the native step's pack (48 MB on the large machine) before its first
token. ``np.load`` of an ``.npz`` copies every array out of the archive (and a file read
into ``bytes`` first copies it once more); ``np.savez`` stores its members uncompressed,
so each array already lies in the file as it will lie in memory, and a view of the mapped
file is the array with no copy. The pages are read once, by the hash that checks the file.
"""

from __future__ import annotations

import mmap
import struct
import zipfile
from math import prod
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")  # a zip member's local file header (30 bytes)
_LOCAL_SIGNATURE = b"PK\x03\x04"
_HEADER_READERS = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0}


def map_file(path: Path) -> mmap.mmap:
    """The whole file at ``path``, mapped read-only (ValueError: an empty file)."""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def npz_views(mapped: mmap.mmap) -> dict[str, np.ndarray]:
    """Each array of the ``.npz`` archive in ``mapped``, by name, as a view of its bytes.

    ValueError: not a zip archive, a member is compressed (``np.savez_compressed``), is not an ``.npy`` array,
    or holds Python objects; the caller then reads the file the ordinary way or not at all."""
    try:
        with zipfile.ZipFile(mapped) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as e:
        raise ValueError(f"not an .npz archive: {e}") from None
    return {m.filename.removesuffix(".npy"): _member_view(mapped, m) for m in members}


def _member_view(mapped: mmap.mmap, member: zipfile.ZipInfo) -> np.ndarray:
    if member.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{member.filename} is compressed: no view of it is its array")
    fields = _LOCAL_HEADER.unpack_from(mapped, member.header_offset)
    if fields[0] != _LOCAL_SIGNATURE:
        raise ValueError(f"{member.filename}: no local header where the archive's directory says")
    start = member.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]  # past its name and extra field
    mapped.seek(start)
    read_header = _HEADER_READERS.get(npy_format.read_magic(mapped))
    if read_header is None:
        raise ValueError(f"{member.filename}: an .npy format this reader does not know")
    shape, fortran, dtype = read_header(mapped)
    if dtype.hasobject:
        raise ValueError(f"{member.filename} holds Python objects")
    offset = mapped.tell()
    count = prod(shape)
    if offset - start + count * dtype.itemsize > member.file_size:
        raise ValueError(f"{member.filename} is shorter than its header says")
    return np.frombuffer(mapped, dtype, count, offset).reshape(shape, order="F" if fortran else "C")
