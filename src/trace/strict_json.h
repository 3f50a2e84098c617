// strict_json.h: a top-level value the reader keeps as text, made fit for the writer.
#pragma once

#include <string>

namespace ptprof::detail {

// A value the cursor captured, made strict JSON where the cursor was lenient (raw control
// characters and invalid UTF-8 in strings, a bare N/A), so that the writer can put it back;
// text that is strict already is left as it is. Returns its nesting depth.
int strict_json(std::string* text);

}  // namespace ptprof::detail
