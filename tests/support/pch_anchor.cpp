// The translation unit that carries tests/support/pch.hpp's precompiled header (the
// scalefit_test_pch object library in tests/CMakeLists.txt); it defines nothing.
