// synchronized_data_loader (torch.profiler's SynchronizedDataLoaderPattern).
#include "torch_traces.h"

namespace ptprof::test {
namespace {

// The Python tracer's calls of `for batch in loader:` with or without workers, and one fetch
// (enumerate(DataLoader)#<iterator>.__next__ holding aten::stack when `ops`).
Trace loader(bool workers, bool ops = true, bool frames = true) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 1000);
  if (frames) {
    t.py("torch/utils/data/dataloader.py(487): __iter__", 10, 90);
    t.py("torch/utils/data/dataloader.py(428): _get_iterator", 11, 89);
    t.py(workers ? "torch/utils/data/dataloader.py(560): check_worker_number_rationality"
                 : "torch/utils/data/dataloader.py(774): __init__",
         12, 30);
  }
  t.range(workers ? "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
                  : "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
          100, 400);
  if (ops) t.op("aten::stack", 120, 380);
  return t.finish();
}

TEST(SynchronizedDataLoader, FiresOnALoaderWithoutWorkers) {
  const auto f = finding(loader(false), "synchronized_data_loader");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, "torch");
  EXPECT_EQ(f->saving_ns_per_step, 300000);  // the fetch, 300 us
  ASSERT_EQ(f->evidence.size(), 2u);
  EXPECT_EQ(f->evidence[0].what,
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, ops inside");
  EXPECT_EQ(f->evidence[1].what,
            "torch/utils/data/dataloader.py(487): __iter__: a DataLoader without workers");
  // Without the Python tracer: the fetch alone says it.
  EXPECT_TRUE(finding(loader(false, true, false), "synchronized_data_loader"));
}

TEST(SynchronizedDataLoader, NotWithWorkers) {
  EXPECT_FALSE(finding(loader(true), "synchronized_data_loader"));
  EXPECT_FALSE(finding(loader(true, true, false), "synchronized_data_loader"));
  // libtorch's DataLoader with workers: ptprof::DataLoaderRange's default name, nothing inside.
  EXPECT_FALSE(finding(loader(false, false, false), "synchronized_data_loader"));
}

}  // namespace
}  // namespace ptprof::test
