# Finds zlib and threads for the core, and libtorch and CUPTI for the recorder (PTPROF_RECORDER).
#
# libtorch: a user's CMAKE_PREFIX_PATH (an unpacked libtorch) wins; otherwise the torch wheel in
# PTPROF_PYTHON's environment (scripts/setup's venv) through torch.utils.cmake_prefix_path.
#
# PTPROF_PYTHON (default: that venv's python) is also what the tests run the trace consumers
# (TensorBoard's plugin, HTA) with.
if(NOT PTPROF_PYTHON)
  if(DEFINED ENV{PTPROF_VENV})
    set(PTPROF_PYTHON "$ENV{PTPROF_VENV}/bin/python")
  else()
    set(PTPROF_PYTHON "$ENV{HOME}/.cache/ptprof/venv/bin/python")
  endif()
endif()
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

set(PTPROF_HAVE_CUPTI OFF)
# The recorder's dependencies; the core needs none of them.
if(PTPROF_RECORDER)
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    execute_process(
      COMMAND "${PTPROF_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _ptprof_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE _ptprof_torch_rc ERROR_QUIET)
    if(NOT _ptprof_torch_rc EQUAL 0)
      message(FATAL_ERROR "ptprof: libtorch not found. Run scripts/setup, set CMAKE_PREFIX_PATH to an "
                          "unpacked libtorch, or PTPROF_PYTHON to a python with torch installed.")
    endif()
    list(APPEND CMAKE_PREFIX_PATH "${_ptprof_torch_prefix}")
    find_package(Torch REQUIRED)
  endif()
  message(STATUS "ptprof: libtorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}")

  if(NOT PTPROF_CUPTI STREQUAL "OFF")
    find_package(CUDAToolkit QUIET)
    if(TARGET CUDA::cupti)
      set(PTPROF_HAVE_CUPTI ON)
      message(STATUS "ptprof: CUPTI found (CUDA ${CUDAToolkit_VERSION}): GPU backend on")
    elseif(PTPROF_CUPTI STREQUAL "ON")
      message(FATAL_ERROR "ptprof: PTPROF_CUPTI=ON but CUPTI (CUDA::cupti) was not found")
    else()
      message(STATUS "ptprof: CUPTI not found: CPU-only build")
    endif()
  endif()
endif()
if(PTPROF_BUILD_TESTS OR PTPROF_RECORDER)  # tests and benchmarks
  find_package(nlohmann_json 3 REQUIRED)  # the tests parse traces back with it
endif()
