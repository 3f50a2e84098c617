// table_codec.h: a trace's shared tables (op input lists, stacks, collectives' arguments) as
// bytes in the index, one entry at a time, so the details pane decodes only the entry of the
// event it shows.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptprof/event.h"

namespace ptprof::view {

std::string encode_inputs(const std::vector<OpInput>& inputs);
std::string encode_stack(const std::vector<std::string>& frames);
std::string encode_collective(const CollectiveInfo& c);

// Throw ptprof::Error on bytes that are not an encoding (a damaged index).
std::vector<OpInput> decode_inputs(std::string_view bytes);
std::vector<std::string> decode_stack(std::string_view bytes);
CollectiveInfo decode_collective(std::string_view bytes);

}  // namespace ptprof::view
