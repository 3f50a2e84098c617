// ptprof view's server in-process, on an ephemeral port (issue 25 section 5): it reads only the
// traces under its directory (no path in a request names a file), refuses other methods and
// other hosts' names (DNS rebinding), sends no CORS headers and a strict CSP, survives hostile
// trace files with an error naming the file, serves several clients at once, follows traces
// written, rewritten and deleted while it runs, and keeps each trace's index for next time.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "flight_builder.h"
#include "ptprof/error.h"
#include "view/view_server.h"
#include "view_test_util.h"

namespace ptprof::test {
namespace {

using nlohmann::json;
using view::ViewOptions;
using view::ViewServer;

class ServerTest : public ::testing::Test {
 protected:
  // Listing every 50 ms, files listed as soon as they are seen (unless `o` says otherwise).
  static ViewOptions fast() {
    ViewOptions o;
    o.poll_ms = 50;
    o.settle_ms = 0;
    return o;
  }
  void start(ViewOptions o = fast()) {
    o.path = o.path.empty() ? logs_.str() : o.path;
    o.port = 0;
    o.port_given = true;
    o.cache_dir = cache_.str();
    server_ = std::make_unique<ViewServer>(o);
    thread_ = std::thread([this] { server_->run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_url_encode(false);
    client_->set_read_timeout(60, 0);
  }
  void stop() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }
  void TearDown() override { stop(); }

  httplib::Result get(const std::string& path) { return client_->Get(path.c_str()); }
  json runs() { return parse(get("/api/runs")->body); }
  // The id of the trace whose file (relative to the root) is `rel`; "" when not listed.
  std::string id_of(const std::string& rel) {
    const json r = runs();
    for (const auto& t : r["traces"])
      if (t["file"] == rel) return t["id"];
    return "";
  }
  std::string wait_listed(const std::string& rel) {
    for (int i = 0; i < 200; ++i) {
      const std::string id = id_of(rel);
      if (!id.empty()) return id;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }
  // Asks until the trace is indexed (200) or failed (422); the last answer.
  httplib::Result ready(const std::string& path) {
    for (int i = 0;; ++i) {
      auto r = get(path);
      if (!r || r->status != 202 || i > 3000) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void save(const Trace& t, const std::string& rel) {
    std::filesystem::create_directories(std::filesystem::path(logs_ / rel).parent_path());
    t.save(logs_ / rel);
  }
  // A request written by hand, byte for byte (what a client library would not send).
  std::string raw(const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(server_->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, n);
    ::close(fd);
    return out;
  }
  std::string host() { return "127.0.0.1:" + std::to_string(server_->port()); }

  ScratchDir scratch_;
  ScratchDir cache_holder_;
  struct Sub {
    std::string base;
    std::string operator/(const std::string& n) const { return base + "/" + n; }
    std::string str() const { return base; }
  };
  Sub logs_{scratch_ / "logs"};
  Sub cache_{scratch_ / "cache"};
  std::unique_ptr<ViewServer> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerTest, ServesThePageAndTheViewsOfEachTrace) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  start();
  auto page = get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<script type=\"module\" src=\"/static/js/app.js\">"), std::string::npos);
  EXPECT_EQ(get("/static/js/app.js")->status, 200);
  EXPECT_EQ(get("/static/js/app.js")->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  const std::string id = id_of("run1/w.1.pt.trace.json");
  ASSERT_FALSE(id.empty()) << runs().dump();
  auto o = ready("/api/overview?trace=" + id);
  ASSERT_EQ(o->status, 200) << o->body;
  const json overview = parse(o->body);
  EXPECT_EQ(overview["report"]["steps"]["per_step"].size(), 4u);
  for (const char* p : {"/api/operators?group=name", "/api/operators?group=shape",
                        "/api/operators?group=stack", "/api/kernels?group=name",
                        "/api/kernels?group=op", "/api/flame?metric=self_cpu_time_total",
                        "/api/timeline", "/api/memory?device=0", "/api/stack?id=0"}) {
    auto r = ready(std::string(p) + (std::string(p).find('?') == std::string::npos ? "?" : "&") +
                   "trace=" + id);
    EXPECT_EQ(r->status, 200) << p << ": " << r->body;
    EXPECT_NO_THROW(parse(r->body)) << p;
  }
  EXPECT_EQ(get("/api/operators?trace=" + id + "&group=nonsense")->status, 400);
  EXPECT_EQ(get("/api/timeline/slices?trace=" + id + "&t0=x")->status, 400);
  // The lanes a page shows: a subset, by lane index ranges.
  const json all = parse(get("/api/timeline/slices?trace=" + id + "&t0=0&t1=100000000&px=100")->body);
  const json one = parse(get("/api/timeline/slices?trace=" + id + "&t0=0&t1=100000000&px=100&lanes=0-0,1")->body);
  ASSERT_GE(all["lanes"].size(), 3u);
  ASSERT_EQ(one["lanes"].size(), 2u);
  EXPECT_EQ(one["lanes"][0], all["lanes"][0]);
  for (const char* bad : {"5-2", "99999", "a", "1-", "-1", "0-1x"})
    EXPECT_EQ(get("/api/timeline/slices?trace=" + id + "&t0=0&t1=10&lanes=" + bad)->status, 400) << bad;
  EXPECT_EQ(get("/api/overview?trace=t999")->status, 404);
}

TEST_F(ServerTest, ReadsNothingButTheListedTraces) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  write_text(scratch_ / "secret.txt", "root:x:0:0 the secret");
  start();
  // Paths: only the embedded assets are files the server sends; nothing is read from disk by
  // path, however the path is spelled.
  for (const std::string& p : std::vector<std::string>{"/static/../../secret.txt", "/static/%2e%2e/%2e%2e/secret.txt", "/static/..%2f..%2fsecret.txt",
        "/%2e%2e/secret.txt", "/static//etc/passwd", "/static/%2Fetc%2Fpasswd", "/etc/passwd",
        "/run1/w.1.pt.trace.json", "/static/js/../../../secret.txt",
        "/api/overview?trace=../secret.txt", "/api/overview?trace=%2Fetc%2Fpasswd",
        "/api/overview?trace=" + scratch_ / "secret.txt", "/api/distributed?run=..",
        "/api/distributed?run=/etc"}) {
    auto r = get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_TRUE(r->status == 404 || r->status == 400) << p << " -> " << r->status;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << p;
    EXPECT_EQ(r->body.find("the secret"), std::string::npos) << p;
  }
  // An absolute-form request line names no file either.
  const std::string abs = raw("GET http://" + host() + "/../secret.txt HTTP/1.1\r\nHost: " + host() +
                              "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(abs.find("root:"), std::string::npos);
}

TEST_F(ServerTest, LinksOutOfTheDirectoryAreNotFollowed) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  save(rich_trace(2), "../outside/o.1.pt.trace.json");  // beside the log directory
  std::filesystem::create_symlink(scratch_ / "outside/o.1.pt.trace.json", logs_ / "run1/link.2.pt.trace.json");
  std::filesystem::create_symlink(scratch_ / "outside", logs_ / "linked_run");
  std::filesystem::create_symlink(logs_ / "run1/w.1.pt.trace.json", logs_ / "run1/inside.3.pt.trace.json");
  start();
  const json r = runs();
  std::set<std::string> files;
  for (const auto& t : r["traces"]) files.insert(t["file"]);
  EXPECT_EQ(files, (std::set<std::string>{"run1/w.1.pt.trace.json", "run1/inside.3.pt.trace.json"}));
}

TEST_F(ServerTest, OnlyGetAndHead) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  start();
  EXPECT_EQ(client_->Post("/api/runs", "x", "text/plain")->status, 405);
  EXPECT_EQ(client_->Put("/api/runs", "x", "text/plain")->status, 405);
  EXPECT_EQ(client_->Delete("/api/runs")->status, 405);
  EXPECT_EQ(client_->Options("/api/runs")->status, 405);
  EXPECT_EQ(client_->Head("/api/runs")->status, 200);
  EXPECT_NE(raw("TRACE / HTTP/1.1\r\nHost: " + host() + "\r\nConnection: close\r\n\r\n").find(" 405 "),
            std::string::npos);
}

TEST_F(ServerTest, RequestsThroughAnotherNameAreRefused) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  start();
  const std::string port = std::to_string(server_->port());
  auto with_host = [&](const std::string& h) {
    return raw("GET /api/runs HTTP/1.1\r\nHost: " + h + "\r\nConnection: close\r\n\r\n");
  };
  // A rebound name (the attacker's domain resolving to 127.0.0.1) is refused...
  for (const std::string& h : std::vector<std::string>{"evil.example:" + port, "evil.example", "localhost.evil.example:" + port,
                              "127.0.0.1:1", "localhost:" + std::to_string(server_->port() + 1), ""}) {
    const std::string r = with_host(h);
    EXPECT_NE(r.find(" 421 "), std::string::npos) << "Host: " << h << "\n" << r.substr(0, 200);
    EXPECT_EQ(r.find("\"traces\""), std::string::npos) << h;
  }
  EXPECT_NE(raw("GET /api/runs HTTP/1.1\r\nConnection: close\r\n\r\n").find(" 421 "), std::string::npos);
  // ...this server's own names are not.
  for (const std::string& h : std::vector<std::string>{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port,
                              "[::1]:" + port})
    EXPECT_NE(with_host(h).find(" 200 "), std::string::npos) << h;
}

TEST_F(ServerTest, NoCorsAndAStrictContentSecurityPolicy) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  start();
  const std::string r = raw("GET /api/runs HTTP/1.1\r\nHost: " + host() +
                            "\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.find("Access-Control-Allow"), std::string::npos);
  auto page = get("/");
  EXPECT_EQ(page->get_header_value("Content-Security-Policy").rfind("default-src 'self'", 0), 0u);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_FALSE(page->has_header("Access-Control-Allow-Origin"));
  // The page has no inline script or style the policy would block.
  EXPECT_EQ(page->body.find("<script>"), std::string::npos);
  EXPECT_EQ(page->body.find("style="), std::string::npos);
}

TEST_F(ServerTest, HostileTracesGiveAnErrorNamingTheFile) {
  save(rich_trace(), "good/w.1.pt.trace.json");
  write_text(logs_ / "bad/truncated.1.pt.trace.json", R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a)");
  write_text(logs_ / "bad/nested.2.pt.trace.json",
             "{\"traceEvents\": [{\"ph\": \"X\", \"args\": " + std::string(200000, '[') + "}]}");
  write_text(logs_ / "bad/huge.3.pt.trace.json",
             "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" +
                 std::string(20 << 20, 'x') + "\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]}");
  write_text(logs_ / "bad/garbage.4.pt.trace.json", std::string("\x1f\x8b\x08\x00garbage\xff\x00", 14));
  write_text(logs_ / "bad/empty.5.pt.trace.json", "");
  write_text(logs_ / "bad/notjson.6.pt.trace.json", "{\"traceEvents\": [1, 2, }");
  start();
  for (const std::string& name : std::vector<std::string>{"truncated.1", "nested.2", "garbage.4", "empty.5", "notjson.6"}) {
    const std::string rel = "bad/" + name + ".pt.trace.json";
    const std::string id = id_of(rel);
    ASSERT_FALSE(id.empty()) << rel;
    auto r = ready("/api/overview?trace=" + id);
    ASSERT_TRUE(r) << rel;
    EXPECT_EQ(r->status, 422) << rel << ": " << r->body;
    const json e = parse(r->body);
    EXPECT_NE(e["error"].get<std::string>().find(name), std::string::npos) << e.dump();
    EXPECT_EQ(e["file"], rel);
    // The listing says so too, and the good trace still works.
    const json listing = runs();
    for (const auto& t : listing["traces"])
      if (t["id"] == id) EXPECT_EQ(t["state"], "failed");
  }
  // A huge name is not an error: the trace opens.
  EXPECT_EQ(ready("/api/overview?trace=" + id_of("bad/huge.3.pt.trace.json"))->status, 200);
  EXPECT_EQ(ready("/api/overview?trace=" + id_of("good/w.1.pt.trace.json"))->status, 200);
}

TEST_F(ServerTest, SeveralClientsAtOnce) {
  save(rich_trace(8), "run1/w.1.pt.trace.json");
  save(rich_trace(3), "run2/w.1.pt.trace.json");
  start();
  const std::string a = id_of("run1/w.1.pt.trace.json"), b = id_of("run2/w.1.pt.trace.json");
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&, c] {
      httplib::Client cl("127.0.0.1", server_->port());
      cl.set_read_timeout(60, 0);
      const std::string id = c % 2 ? a : b;
      const std::string paths[] = {"/api/overview?trace=" + id, "/api/timeline?trace=" + id,
                                   "/api/timeline/slices?trace=" + id + "&t0=0&t1=100000000&px=500",
                                   "/api/operators?trace=" + id, "/api/runs", "/",
                                   "/api/diff?a=" + a + "&b=" + b};
      for (int i = 0; i < 30; ++i) {
        for (;;) {
          auto r = cl.Get(paths[(i + c) % 7].c_str());
          if (r && r->status == 202) continue;
          (r && r->status == 200 ? ok : bad)++;
          break;
        }
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(ok, 240);
}

TEST_F(ServerTest, TracesWrittenRewrittenAndDeletedWhileServing) {
  save(rich_trace(4), "run1/w.1.pt.trace.json");
  start();
  const std::string id = id_of("run1/w.1.pt.trace.json");
  const json first = parse(ready("/api/overview?trace=" + id)->body);
  EXPECT_EQ(first["report"]["steps"]["per_step"].size(), 4u);
  // A new window, as on_trace_ready writes it (temporary file, then rename): listed soon.
  save(rich_trace(2), "run1/w.2.pt.trace.json");
  EXPECT_FALSE(wait_listed("run1/w.2.pt.trace.json").empty());
  // A writer's temporary file is never listed.
  write_text(logs_ / "run1/.w.3.pt.trace.json.123.1.tmp", "{\"traceEvents\": [");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const json listing = runs();
  for (const auto& t : listing["traces"]) EXPECT_EQ(t["file"].get<std::string>().find("tmp"), std::string::npos);
  // Rewritten in place: the same id, indexed again.
  save(rich_trace(6), "run1/w.1.pt.trace.json");
  for (int i = 0; i < 500; ++i) {
    auto r = ready("/api/overview?trace=" + id);
    if (r->status == 200 && parse(r->body)["report"]["steps"]["per_step"].size() == 6u) break;
    ASSERT_LT(i, 499) << "the rewritten trace was not indexed again";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Deleted: an error naming it, then gone from the listing (which a second's listing may
  // already have caught up with: then the id is unknown).
  std::filesystem::remove(logs_ / "run1/w.1.pt.trace.json");
  auto gone = get("/api/overview?trace=" + id);
  const std::string error = parse(gone->body)["error"].get<std::string>();
  if (gone->status == 404) {
    EXPECT_NE(error.find("no trace \"" + id + "\""), std::string::npos) << error;
  } else {
    EXPECT_EQ(gone->status, 422);
    EXPECT_NE(error.find("w.1.pt.trace.json"), std::string::npos) << error;
  }
  for (int i = 0; i < 200 && !id_of("run1/w.1.pt.trace.json").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(id_of("run1/w.1.pt.trace.json").empty());
}

TEST_F(ServerTest, AFileStillBeingWrittenWaitsUntilItSettles) {
  ViewOptions o = fast();
  o.settle_ms = 400;
  save(rich_trace(), "run1/old.1.pt.trace.json");
  std::filesystem::last_write_time(logs_ / "run1/old.1.pt.trace.json",
                                   std::filesystem::file_time_type::clock::now() - std::chrono::seconds(10));
  start(o);
  // torch.profiler's handler writes the final name in place: seen growing, it is not listed.
  const std::string path = logs_ / "run1/live.2.pt.trace.json";
  write_text(path, "{\"schemaVersion\": 1, \"traceEvents\": [");
  for (int i = 0; i < 5; ++i) {
    std::ofstream(path, std::ios::app) << "{\"ph\": \"X\"},";
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    EXPECT_TRUE(id_of("run1/live.2.pt.trace.json").empty());
  }
  EXPECT_FALSE(id_of("run1/old.1.pt.trace.json").empty());
  // Unchanged for a listing (and past the settle time): listed.
  EXPECT_FALSE(wait_listed("run1/live.2.pt.trace.json").empty());
}

TEST_F(ServerTest, TheIndexIsKeptAndUsedAgain) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  start();
  ASSERT_EQ(ready("/api/overview?trace=" + id_of("run1/w.1.pt.trace.json"))->status, 200);
  const std::string index = logs_ / "run1/.w.1.pt.trace.json.ptprof-index";
  ASSERT_TRUE(std::filesystem::exists(index));
  const auto written = std::filesystem::last_write_time(index);
  const std::string overview = get("/api/overview?trace=" + id_of("run1/w.1.pt.trace.json"))->body;
  stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  start();
  auto again = ready("/api/overview?trace=" + id_of("run1/w.1.pt.trace.json"));
  EXPECT_EQ(again->body, overview);
  EXPECT_EQ(std::filesystem::last_write_time(index), written) << "the index was built again";
}

TEST_F(ServerTest, IndexGoesToTheCacheWhenItCannotGoBesideTheTrace) {
  save(rich_trace(), "run1/w.1.pt.trace.json");
  // Where the index would go beside the trace, something else is: it cannot be written there.
  std::filesystem::create_directories(logs_ / "run1/.w.1.pt.trace.json.ptprof-index/x");
  start();
  ASSERT_EQ(ready("/api/overview?trace=" + id_of("run1/w.1.pt.trace.json"))->status, 200);
  int cached = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache_.str()))
    cached += e.path().string().find("w.1.pt.trace.json.ptprof-index") != std::string::npos;
  EXPECT_EQ(cached, 2);  // the index and its tables
}

TEST_F(ServerTest, AReadOnlyDirectoryIsLeftAloneEvenByRoot) {
  save(rich_trace(), "archive/w.1.pt.trace.json");
  std::filesystem::permissions(logs_ / "archive", std::filesystem::perms::owner_read |
                                                      std::filesystem::perms::owner_exec |
                                                      std::filesystem::perms::group_read |
                                                      std::filesystem::perms::group_exec);
  start();
  ASSERT_EQ(ready("/api/overview?trace=" + id_of("archive/w.1.pt.trace.json"))->status, 200);
  EXPECT_FALSE(std::filesystem::exists(logs_ / "archive/.w.1.pt.trace.json.ptprof-index"));
  int cached = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache_.str())) cached += e.is_regular_file();
  EXPECT_EQ(cached, 2);
  std::filesystem::permissions(logs_ / "archive", std::filesystem::perms::owner_all);
}

TEST_F(ServerTest, DirectoriesHoldHtaNamedTracesAndOneFileIsARun) {
  save(rich_trace(), "job/rank-0.json");
  save(rich_trace(), "job/rank-1.json");
  write_text(logs_ / "job/memory.json", "{\"devices\": []}");
  start();
  std::set<std::string> workers;
  const json listing = runs();
  for (const auto& t : listing["traces"]) {
    EXPECT_EQ(t["run"], "job");
    workers.insert(t["worker"]);
  }
  EXPECT_EQ(workers, (std::set<std::string>{"rank-0", "rank-1"}));
  stop();
  ViewOptions o = fast();
  o.path = logs_ / "job/rank-1.json";
  start(o);
  const json r = runs();
  ASSERT_EQ(r["traces"].size(), 1u);
  EXPECT_EQ(r["traces"][0]["file"], "rank-1.json");
  EXPECT_EQ(ready("/api/overview?trace=" + r["traces"][0]["id"].get<std::string>())->status, 200);
}

// A crash leaves only its raw dump: it is listed and opened as the trace it stands for. A dump
// whose trace was written beside it is listed once, as that trace.
TEST_F(ServerTest, AFlightRecorderDumpIsATraceWhereNoneWasWrittenBesideIt) {
  FlightBuilder b(0, 2, detail::flight::Reason::kCrash, kDump);
  const int t = b.thread(11, "main");
  b.open(t, "forward", kDump - 3 * kSec, /*range=*/true);
  b.open(t, "aten::nonzero", kDump - 2 * kSec);
  b.done(t, "aten::mm", kDump - 5 * kSec, kDump - 4 * kSec);
  std::filesystem::create_directories(logs_ / "job");
  write_text(logs_ / "job/host_1000_rank0.ptflight", b.bytes());
  write_text(logs_ / "job/host_1001_rank1.ptflight", b.bytes());
  save(rich_trace(), "job/host_1001_rank1.pt.trace.json.gz");
  write_text(logs_ / "job/.host_1002_rank2.ptflight", b.bytes());  // hidden: a dump in progress
  start();
  std::set<std::string> files;
  const json listing = runs();
  for (const auto& f : listing["traces"]) files.insert(f["file"]);
  EXPECT_EQ(files, (std::set<std::string>{"job/host_1000_rank0.ptflight",
                                          "job/host_1001_rank1.pt.trace.json.gz"}));
  const std::string id = id_of("job/host_1000_rank0.ptflight");
  auto r = ready("/api/overview?trace=" + id);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto ops = ready("/api/operators?group=name&trace=" + id);
  ASSERT_TRUE(ops);
  ASSERT_EQ(ops->status, 200) << ops->body;
  EXPECT_NE(ops->body.find("aten::nonzero"), std::string::npos);
  EXPECT_NE(ops->body.find("aten::mm"), std::string::npos);
}

TEST_F(ServerTest, DiffAndDistributedAreThoseOfPtprof) {
  save(training_trace(4, 1000, true), "a/w.1.pt.trace.json");
  save(training_trace(4, 1500, true, "aten::mul", 300), "b/w.1.pt.trace.json");
  start();
  auto d = ready("/api/diff?a=" + id_of("a/w.1.pt.trace.json") + "&b=" + id_of("b/w.1.pt.trace.json"));
  ASSERT_EQ(d->status, 200) << d->body;
  const json diff = parse(d->body);
  EXPECT_EQ(diff["schema"], "ptprof.report_diff/1");
  EXPECT_EQ(diff["before"], "a/w.1.pt.trace.json");
  EXPECT_EQ(diff["unit"], "step");
  EXPECT_NEAR(diff["steps"]["step"]["delta_us"].get<double>(), 500.0, 1e-6);
  // A run whose workers are no ranks of one job: ptprof's own error.
  auto x = get("/api/distributed?run=a");
  EXPECT_EQ(x->status, 200);
  EXPECT_NE(parse(x->body)["not_ranks"].get<std::string>().find("rank"), std::string::npos) << x->body;
  EXPECT_EQ(get("/api/distributed?run=nope")->status, 404);
}

TEST(ViewServerBind, AnythingButLoopbackIsSaidToBeExposed) {
  ScratchDir d;
  test::TraceBuilder b;
  b.op("aten::mm", 0, 10);
  b.finish().save(d / "w.1.pt.trace.json");
  ViewOptions o;
  o.path = d.str();
  o.port = 0;
  o.cache_dir = "";
  EXPECT_EQ(ViewServer(o).exposure_warning(), "");
  o.host = "0.0.0.0";
  const std::string w = ViewServer(o).exposure_warning();
  EXPECT_NE(w.find("not on loopback"), std::string::npos) << w;
  EXPECT_NE(w.find("0.0.0.0"), std::string::npos) << w;
  o.host = "203.0.113.7";  // not this machine's: binding fails, naming the address
  try {
    ViewServer s(o);
    FAIL() << "bound an address this machine does not have";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("203.0.113.7"), std::string::npos) << e.what();
  }
}

TEST(ViewServerBind, AMissingPathIsAnErrorNamingIt) {
  ViewOptions o;
  o.path = "/nonexistent/ptprof/logs";
  o.port = 0;
  try {
    ViewServer s(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ptprof/logs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ptprof::test
