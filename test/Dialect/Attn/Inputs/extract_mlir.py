"""Prints the ```mlir blocks of a Markdown file, so docs examples are tested."""
import sys

inside = False
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip() == "```mlir":
        inside = True
    elif line.strip() == "```" and inside:
        inside = False
    elif inside:
        sys.stdout.write(line)
