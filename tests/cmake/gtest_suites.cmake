# One ctest test per GoogleTest suite (`Suite.*`), not per case: each test process of a binary
# linked against libtorch spends ~0.5 s of CPU loading it, which per case was minutes of every CI
# stage. Cases of a suite share a process, so a suite's cases must not depend on a fresh one.
#
#   ptprof_gtest_suites(TARGET
#     LABELS label...                     every suite's labels
#     [SUITE_LABELS "Suite=label,label"...]  extra labels of some suites (e.g. threads)
#     [TIMEOUT seconds] [PREFIX name.])
#
# The list is made after each build of TARGET (as gtest_discover_tests' POST_BUILD mode does),
# by running it with --gtest_list_tests; ctest reads it through TEST_INCLUDE_FILES.
function(ptprof_gtest_suites target)
  cmake_parse_arguments(arg "" "TIMEOUT;PREFIX" "LABELS;SUITE_LABELS" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 600)
  endif()
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  string(REPLACE ";" "|" labels "${arg_LABELS}")
  string(REPLACE ";" "|" suite_labels "${arg_SUITE_LABELS}")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D EXE=$<TARGET_FILE:${target}> -D OUT=${ctest_file}
            -D "LABELS=${labels}" -D "SUITE_LABELS=${suite_labels}" -D TIMEOUT=${arg_TIMEOUT}
            -D PREFIX=${arg_PREFIX} -P ${PROJECT_SOURCE_DIR}/tests/cmake/gtest_suites_list.cmake
    BYPRODUCTS ${ctest_file} VERBATIM)
  # A binary a build left out (the ThreadSanitizer stage builds only some) has a placeholder
  # test with no label, which a labelled run (ctest -L) leaves out too.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS \"${ctest_file}\")\n  include(\"${ctest_file}\")\nelse()\n"
    "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
