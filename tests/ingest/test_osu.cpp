// OSU reader tests (filled in with the OSU reader).
