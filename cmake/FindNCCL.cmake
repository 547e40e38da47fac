# Locates NCCL: NCCL_HOME (env or cache) first, then the CUDA toolkit's own include/ and lib/.
# Defines the IMPORTED target NCCL::nccl and SCALEFIT_HAVE_NCCL.
set(_nccl_hints ${NCCL_HOME} $ENV{NCCL_HOME})
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES include)
find_library(NCCL_LIBRARY nccl
  HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES lib lib64)
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(SCALEFIT_HAVE_NCCL ON)
  if(NOT TARGET NCCL::nccl)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES
      IMPORTED_LOCATION "${NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  endif()
  message(STATUS "NCCL: ${NCCL_LIBRARY}")
else()
  set(SCALEFIT_HAVE_NCCL OFF)
  message(STATUS "NCCL not found (set NCCL_HOME): the nccl backend is not built")
endif()
