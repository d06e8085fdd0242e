#!/usr/bin/env python3
"""Replaces the code object embedded in a `wavec --stub` C file by another one.

  swap_stub_image.py STUB.c IMAGE.cubin OUT.c

For device experiments on a code object changed after wavec (PTX edited or re-lowered by hand,
then assembled with ptxas): the stub's launch logic, argument checks and grid formulas stay
those wavec generated, only the bytes of its first image change. The kernel name and
parameters of IMAGE must be those of the stub's kernel.
"""
import re
import sys


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    stub, image, out = sys.argv[1:]
    with open(stub) as f:
        text = f.read()
    with open(image, "rb") as f:
        data = f.read()
    rows = ",\n".join("  " + ", ".join("0x%02x" % b for b in data[i:i + 16])
                      for i in range(0, len(data), 16))
    new, n = re.subn(r"static const unsigned char wave_image_0_\[\d+\] = \{.*?\n\};",
                     lambda m: "static const unsigned char wave_image_0_[%d] = {\n%s\n};"
                     % (len(data), rows), text, count=1, flags=re.S)
    if n != 1:
        sys.stderr.write(f"{stub}: no embedded image wave_image_0_ found\n")
        return 1
    with open(out, "w") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
