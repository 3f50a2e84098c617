# ptprof_embed_text(SOURCE OUTPUT NAME): OUTPUT, a header defining
#   inline constexpr char ptprof::detail::NAME[]
# with SOURCE's text, written at configure time (and again whenever SOURCE changes: it is a
# configure dependency). Keeps style sheets in files of their own, compiled into the library.
function(ptprof_embed_text source output name)
  file(READ "${source}" EMBED_CONTENT)
  if(EMBED_CONTENT MATCHES "\\)ptprof_embed\"")
    message(FATAL_ERROR "${source} contains the raw string's delimiter")
  endif()
  set(EMBED_SOURCE "${source}")
  set(EMBED_NAME "${name}")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/embed_text.h.in" "${output}" @ONLY)
  set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source}")
endfunction()
