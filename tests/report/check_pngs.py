#!/usr/bin/env python3
"""Checks a `scalefit report` directory: every plot in plots.json has a PNG that is a real image
of the stated size and not blank, and index.html shows each of them.

Usage: check_pngs.py DIR [EXPECTED_PLOT_COUNT]

The PNG is decoded here with the standard library only (zlib; the five scanline filters of the
PNG specification, 8-bit RGB, RGBA or palette), so the check does not trust the library that wrote it.
"Not blank": the pixel values vary (standard deviation > 10 of 255) and at least 2% of the
pixels differ from the most common (background) colour.
"""
import collections
import json
import os
import struct
import sys
import zlib


def decode_png(path):
    """Returns (width, height, channels, rows of bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s: not a PNG (bad signature)" % path)
    pos, idat, ihdr, plte = 8, b"", None, None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]:
            raise ValueError("%s: bad CRC in chunk %r" % (path, kind))
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            plte = body
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        raise ValueError("%s: no IHDR" % path)
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 3, 6) or interlace or (ctype == 3 and not plte):
        raise ValueError("%s: unsupported PNG (depth %d, colour type %d, interlace %d)"
                         % (path, depth, ctype, interlace))
    ch = {2: 3, 3: 1, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * ch
    if len(raw) != h * (stride + 1):
        raise ValueError("%s: %d bytes of image data for %dx%d" % (path, len(raw), w, h))
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + b) & 255
            elif ft == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 255
            elif ft != 0:
                raise ValueError("%s: bad filter %d in row %d" % (path, ft, y))
        rows.append(bytes(line))
        prev = line
    if ctype == 3:  # palette indices -> RGB
        rows = [b"".join(plte[3 * i:3 * i + 3] for i in r) for r in rows]
        ch = 3
    return w, h, ch, rows


def check_not_blank(path, w, h, ch, rows):
    colours = collections.Counter()
    n, s, s2 = 0, 0.0, 0.0
    for r in rows[::2]:
        for x in range(0, w * ch, ch * 2):
            px = r[x:x + 3]
            colours[px] += 1
            for v in px:
                n += 1
                s += v
                s2 += v * v
    mean = s / n
    sd = (s2 / n - mean * mean) ** 0.5
    bg = colours.most_common(1)[0][1] / sum(colours.values())
    if sd <= 10 or bg > 0.98:
        raise ValueError("%s looks blank: pixel sd %.1f, background %.1f%% of pixels"
                         % (path, sd, 100 * bg))
    return sd, bg


def main(argv):
    d = argv[1]
    with open(os.path.join(d, "plots.json")) as f:
        plots = json.load(f)
    if len(argv) > 2 and len(plots) != int(argv[2]):
        print("FAIL: %d plots, expected %s" % (len(plots), argv[2]))
        return 1
    with open(os.path.join(d, "index.html")) as f:
        html = f.read()
    bad = 0
    for p in plots:
        path = os.path.join(d, p["png"])
        try:
            w, h, ch, rows = decode_png(path)
            if (w, h) != (p["width_px"], p["height_px"]):
                raise ValueError("%s is %dx%d, stated %dx%d" % (path, w, h, p["width_px"],
                                                                 p["height_px"]))
            sd, bg = check_not_blank(path, w, h, ch, rows)
            if 'src="%s"' % p["png"] not in html:
                raise ValueError("index.html does not show %s" % p["png"])
            print("ok %s %dx%d pixel sd %.1f background %.0f%%" % (p["png"], w, h, sd, 100 * bg))
        except (OSError, ValueError, zlib.error) as e:
            print("FAIL %s" % e)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
