// The translation unit that carries cmake/pch.hpp's precompiled header (the scalefit_pch object
// library in CMakeLists.txt); it defines nothing.
