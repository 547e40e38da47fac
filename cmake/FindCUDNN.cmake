# Locates cuDNN 9 (cudnn.h, libcudnn) and the header-only cuDNN frontend (cudnn_frontend.h, from
# PyPI's nvidia-cudnn-frontend, which scripts/setup.sh unpacks into .deps/cudnn-frontend).
# Hints: CUDNN_HOME (env or cache) for cuDNN, then the CUDA toolkit's include/ and lib/;
# CUDNN_FRONTEND_INCLUDE_DIR (cache) or CUDNN_FRONTEND_HOME (env) for the frontend, then
# <source>/.deps/cudnn-frontend/include.
# Defines the IMPORTED target CUDNN::cudnn (library + both include dirs) and SCALEFIT_HAVE_CUDNN
# (ON only when all three are found; fused attention is optional at build time, like NCCL).
set(_cudnn_hints ${CUDNN_HOME} $ENV{CUDNN_HOME})
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY cudnn
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES lib lib64 lib/x64)
find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
  HINTS $ENV{CUDNN_FRONTEND_HOME} ${PROJECT_SOURCE_DIR}/.deps/cudnn-frontend
  PATH_SUFFIXES include)
# A cached path whose header has since gone (a removed .deps/) counts as not found.
if(CUDNN_FRONTEND_INCLUDE_DIR AND NOT EXISTS "${CUDNN_FRONTEND_INCLUDE_DIR}/cudnn_frontend.h")
  unset(CUDNN_FRONTEND_INCLUDE_DIR CACHE)
  set(CUDNN_FRONTEND_INCLUDE_DIR "")
endif()
if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND CUDNN_FRONTEND_INCLUDE_DIR)
  set(SCALEFIT_HAVE_CUDNN ON)
  if(NOT TARGET CUDNN::cudnn)
    add_library(CUDNN::cudnn UNKNOWN IMPORTED)
    set_target_properties(CUDNN::cudnn PROPERTIES
      IMPORTED_LOCATION "${CUDNN_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR};${CUDNN_FRONTEND_INCLUDE_DIR}")
  endif()
  message(STATUS "cuDNN: ${CUDNN_LIBRARY}; frontend: ${CUDNN_FRONTEND_INCLUDE_DIR}")
else()
  set(SCALEFIT_HAVE_CUDNN OFF)
  if(NOT CUDNN_FRONTEND_INCLUDE_DIR)
    message(STATUS "cuDNN frontend not found (run scripts/setup.sh or set "
                   "CUDNN_FRONTEND_INCLUDE_DIR): fused attention on the GPU is not built")
  else()
    message(STATUS "cuDNN not found (set CUDNN_HOME): fused attention on the GPU is not built")
  endif()
endif()
