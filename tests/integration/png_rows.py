"""png_rows.py - the pixels of a PNG that rsvg-convert wrote, for the plot
tests (standard library only): 8-bit RGB or RGBA, not interlaced.

    python3 png_rows.py FILE      prints "WIDTH HEIGHT"
    from png_rows import read     read(FILE) -> (width, height, bpp, rows)

rows[y] is row y's bytes, unfiltered: pixel x at rows[y][x * bpp:x * bpp + bpp].
"""

import struct
import sys
import zlib


def read(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s: not a PNG" % path)
    w, h, depth, ctype = struct.unpack(">IIBB", data[16:26])
    if depth != 8 or ctype not in (2, 6):
        raise ValueError("%s: not 8-bit RGB or RGBA" % path)
    idat, p = b"", 8
    while p < len(data):
        n, = struct.unpack(">I", data[p:p + 4])
        if data[p + 4:p + 8] == b"IDAT":
            idat += data[p + 8:p + 8 + n]
        p += 12 + n
    raw, bpp = zlib.decompress(idat), {2: 3, 6: 4}[ctype]
    stride, rows, prev = w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
            paeth = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[i] = (line[i] + (0, a, b, (a + b) // 2, paeth)[f]) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


if __name__ == "__main__":
    w, h, _, _ = read(sys.argv[1])
    print(w, h)
