#include <algorithm>

#include "trace/json_writer.h"
#include "view/view_tables.h"

namespace ptprof::view {

using detail::JsonWriter;

void write_overview(const Trace& t, const Report& r, const std::string& file, IndexWriter& w) {
  JsonWriter j;
  j.begin_object();
  j.key("file").value(file);
  j.key("source").begin_object();
  j.key("process_name").value(r.source.process_name);
  j.key("worker_name").value(r.source.worker_name);
  j.key("pid").value(r.source.pid);
  j.key("window_start_ns").value(r.source.window_start_ns);
  j.key("window_end_ns").value(r.source.window_end_ns);
  j.key("window_index").value(r.source.window_index);
  j.key("events").value(r.source.events);
  j.key("memory_events").value(static_cast<uint64_t>(t.memory_events.size()));
  j.key("steps").value(static_cast<uint64_t>(t.steps.size()));
  j.end_object();
  // TensorBoard's GPU summary lists each device's name, memory and compute capability.
  j.key("devices").begin_array();
  for (const DeviceProperties& d : t.devices) {
    j.begin_object();
    j.key("id").value(d.id);
    j.key("name").value(d.name);
    j.key("total_memory_bytes").value(d.total_global_mem);
    j.key("compute_capability").value(std::to_string(d.compute_major) + "." +
                                      std::to_string(d.compute_minor));
    j.key("sms").value(d.num_sms);
    j.end_object();
  }
  j.end_array();
  j.key("has_stacks").value(!t.stacks.empty());
  j.key("has_inputs").value(!t.op_inputs.empty());
  j.key("has_memory").value(!t.memory_events.empty());
  // The Report's utilization over time per device (not in its to_json).
  j.key("utilization").begin_array();
  for (const Report::Device& d : r.devices) {
    j.begin_object();
    j.key("device").value(d.id);
    j.key("start_ns").value(d.window_start_ns);
    j.key("bucket_ns").value(d.utilization_bucket_ns);
    j.key("series").begin_array();
    for (double v : d.utilization_series) j.value(v);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("report").raw(r.to_json());
  j.end_object();
  w.add("overview", j.buffer());
}

}  // namespace ptprof::view
