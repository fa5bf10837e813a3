# Wraps a text file into a C++ raw string literal: -DINPUT=... -DOUTPUT=...
file(READ "${INPUT}" contents)
file(WRITE "${OUTPUT}.tmp" "R\"mlir(${contents})mlir\"\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
