import re,sys
s=open(sys.argv[1]).read()
m=re.search(r'assembly = "(.*?)"(?:,|>)', s, re.S)
t=m.group(1)
# unescape MLIR string escapes \0A etc
out=re.sub(r'\\([0-9A-Fa-f]{2})', lambda x: chr(int(x.group(1),16)), t).replace('\\\\','\\')
open(sys.argv[2],'w').write(out.rstrip('\0'))
