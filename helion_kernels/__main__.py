"""`python -m helion_kernels info`: print the runtime's view of this machine."""
import sys

from ._info import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args not in ([], ["info"]):
        sys.exit("usage: python -m helion_kernels info")
    sys.exit(main(args))
