// TrainingMetrics: names, types and values as a scraper sees them over HTTP (a raw-socket GET of
// /metrics on 127.0.0.1, port chosen by the kernel), kernel time from step stats, a push to a
// stand-in Pushgateway, and `promtool check metrics` on the scraped text when promtool exists.
#include "monitoring/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "monitoring/http_testlib.h"

namespace sluice {
namespace {

using testing_http::HttpGet;

MetricsOptions LocalOptions() {
  MetricsOptions o;
  o.role = "worker";
  o.task = 3;
  o.bind_address = "127.0.0.1";
  o.port = 0;
  o.version = "test";
  return o;
}

// "# TYPE name type" lines of an exposition.
std::map<std::string, std::string> Types(const std::string& text) {
  std::map<std::string, std::string> types;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "# TYPE ")) continue;
    if (absl::StartsWith(line, "exposer_")) continue;  // prometheus-cpp's own server metrics
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() == 2) types[parts[0]] = parts[1];
  }
  return types;
}

// The value of the sample whose name-and-labels part is exactly `series`, or NaN.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, series + " ")) {
      double v;
      if (absl::SimpleAtod(line, &v)) return v;
    }
  }
  return std::nan("");
}

void Exercise(TrainingMetrics* m) {
  m->OnStep(128, 0.02, 0.75, 0.05);
  m->OnStep(128, 0.3, 0.5, 0.05);
  m->SetGlobalStep(1202, 5000);
  m->SetInputQueue(900, 20000);
  m->SetRecoveries(2);
  m->SetStaleGradients(17);
  m->SetPeersAlive(3);
  m->SetAggregatedGradients(2);
  m->OnCheckpointSaved(1.5, absl::FromUnixSeconds(1700000000));
  std::vector<NodeExecStats> stats(3);
  stats[0] = {"a", "MatMul", 0, 0, 1000, 2001000, 1};
  stats[1] = {"b", "MatMul", 0, 0, 1000, 1001000, 2};
  stats[2] = {"c", "Add", 0, 0, 5000, 505000, 1};
  m->AddStepStats(stats);
  AllocatorStats gpu;
  gpu.bytes_in_use = 1 << 20;
  gpu.peak_bytes_in_use = 3 << 20;
  gpu.bytes_limit = 64 << 20;
  gpu.largest_free_block = 60 << 20;
  gpu.fragmentation = 0.25;
  m->SetDeviceMemory("/job:localhost/replica:0/task:0/device:GPU:0", gpu);
  m->SetEvaluation(1000, {{"loss", 0.5}, {"accuracy", 0.25}});
  m->SetEvaluation(1200, {{"loss", 0.375}, {"accuracy", 0.875}});
}

// Every series on: a sync run's chief.
MetricsOptions ChiefOptions() {
  MetricsOptions o = LocalOptions();
  o.series.sync_aggregation = true;
  o.series.health_checks = true;
  return o;
}

TEST(TrainingMetricsTest, ScrapeOverHttpHasNamesTypesAndValues) {
  auto m = TrainingMetrics::Create(ChiefOptions());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_GT((*m)->port(), 0);
  Exercise(m->get());

  testing_http::HttpResponse r = HttpGet((*m)->port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.headers;
  const std::string& text = r.body;
  const std::map<std::string, std::string> expected_types = {
      {"sluice_train_steps_total", "counter"},
      {"sluice_train_examples_total", "counter"},
      {"sluice_step_duration_seconds", "histogram"},
      {"sluice_loss", "gauge"},
      {"sluice_learning_rate", "gauge"},
      {"sluice_global_step", "gauge"},
      {"sluice_last_step", "gauge"},
      {"sluice_input_queue_size", "gauge"},
      {"sluice_input_queue_capacity", "gauge"},
      {"sluice_recoveries", "gauge"},
      {"sluice_stale_gradients", "gauge"},
      {"sluice_peers_alive", "gauge"},
      {"sluice_aggregated_gradients", "gauge"},
      {"sluice_checkpoint_save_duration_seconds", "histogram"},
      {"sluice_checkpoint_last_success_timestamp_seconds", "gauge"},
      {"sluice_kernel_seconds_total", "counter"},
      {"sluice_build_info", "gauge"},
      {"sluice_device_memory_in_use_bytes", "gauge"},
      {"sluice_device_memory_peak_bytes", "gauge"},
      {"sluice_device_memory_limit_bytes", "gauge"},
      {"sluice_device_memory_largest_free_bytes", "gauge"},
      {"sluice_device_memory_fragmentation_ratio", "gauge"},
      {"sluice_eval_value", "gauge"},
      {"sluice_eval_step", "gauge"},
  };
  EXPECT_EQ(Types(text), expected_types) << text;

  const std::string id = "role=\"worker\",task=\"3\"";
  EXPECT_EQ(Sample(text, "sluice_train_steps_total{" + id + "}"), 2) << text;
  EXPECT_EQ(Sample(text, "sluice_train_examples_total{" + id + "}"), 256);
  EXPECT_EQ(Sample(text, "sluice_loss{" + id + "}"), 0.5);
  EXPECT_EQ(Sample(text, "sluice_learning_rate{" + id + "}"), 0.05);
  EXPECT_EQ(Sample(text, "sluice_global_step{" + id + "}"), 1202);
  EXPECT_EQ(Sample(text, "sluice_last_step{" + id + "}"), 5000);
  EXPECT_EQ(Sample(text, "sluice_input_queue_size{" + id + "}"), 900);
  EXPECT_EQ(Sample(text, "sluice_input_queue_capacity{" + id + "}"), 20000);
  EXPECT_EQ(Sample(text, "sluice_recoveries{" + id + "}"), 2);
  EXPECT_EQ(Sample(text, "sluice_stale_gradients{" + id + "}"), 17);
  EXPECT_EQ(Sample(text, "sluice_peers_alive{" + id + "}"), 3);
  EXPECT_EQ(Sample(text, "sluice_aggregated_gradients{" + id + "}"), 2);
  EXPECT_EQ(Sample(text, "sluice_step_duration_seconds_count{" + id + "}"), 2);
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_step_duration_seconds_sum{" + id + "}"), 0.32);
  EXPECT_EQ(Sample(text, "sluice_step_duration_seconds_bucket{" + id + ",le=\"0.025\"}"), 1);
  EXPECT_EQ(Sample(text, "sluice_step_duration_seconds_bucket{" + id + ",le=\"+Inf\"}"), 2);
  EXPECT_EQ(Sample(text, "sluice_checkpoint_save_duration_seconds_count{" + id + "}"), 1);
  EXPECT_EQ(Sample(text, "sluice_checkpoint_last_success_timestamp_seconds{" + id + "}"), 1700000000);
  // Labels are serialized sorted by name.
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_kernel_seconds_total{op=\"MatMul\",role=\"worker\",task=\"3\"}"), 0.003);
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_kernel_seconds_total{op=\"Add\",role=\"worker\",task=\"3\"}"), 0.0005);
  EXPECT_EQ(Sample(text, "sluice_build_info{" + id + ",version=\"test\"}"), 1);
  const std::string gpu = "device=\"/job:localhost/replica:0/task:0/device:GPU:0\"," + id;
  EXPECT_EQ(Sample(text, "sluice_device_memory_in_use_bytes{" + gpu + "}"), 1 << 20) << text;
  EXPECT_EQ(Sample(text, "sluice_device_memory_peak_bytes{" + gpu + "}"), 3 << 20);
  EXPECT_EQ(Sample(text, "sluice_device_memory_limit_bytes{" + gpu + "}"), 64 << 20);
  EXPECT_EQ(Sample(text, "sluice_device_memory_largest_free_bytes{" + gpu + "}"), 60 << 20);
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_device_memory_fragmentation_ratio{" + gpu + "}"), 0.25);
  EXPECT_EQ(Sample(text, "sluice_eval_value{name=\"loss\"," + id + "}"), 0.375) << text;
  EXPECT_EQ(Sample(text, "sluice_eval_value{name=\"accuracy\"," + id + "}"), 0.875);
  EXPECT_EQ(Sample(text, "sluice_eval_step{" + id + "}"), 1200);

  // Only role and task (plus op, device, and version on the info metric) as labels: never job or
  // instance, which Prometheus sets itself.
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#' || absl::StartsWith(line, "exposer_")) continue;
    size_t open = line.find('{');
    ASSERT_NE(open, absl::string_view::npos) << line;
    for (absl::string_view label : absl::StrSplit(line.substr(open + 1, line.find('}') - open - 1), ',')) {
      absl::string_view key = label.substr(0, label.find('='));
      EXPECT_TRUE(key == "role" || key == "task" || key == "op" || key == "le" || key == "version" ||
                  key == "device" || key == "name")
          << line;
    }
  }
  // Scrape() gives the same sluice_ families (the exposer_ ones belong to the server).
  auto ours = [](const std::string& t) {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(t, '\n')) {
      if (!absl::StrContains(line, "exposer_")) lines.emplace_back(line);
    }
    return lines;
  };
  EXPECT_EQ(ours(text), ours((*m)->Scrape()));
}

TEST(TrainingMetricsTest, NotServingAndBadOptions) {
  MetricsOptions o = LocalOptions();
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->port(), 0);
  (*m)->OnStep(1, 0.1, 1, 1);
  EXPECT_TRUE(absl::StrContains((*m)->Scrape(), "sluice_train_steps_total"));

  o = LocalOptions();
  o.role = "";
  EXPECT_TRUE(absl::IsInvalidArgument(TrainingMetrics::Create(o).status()));
  o = LocalOptions();
  o.port = 70000;
  EXPECT_TRUE(absl::IsInvalidArgument(TrainingMetrics::Create(o).status()));
}

// Whether a TCP connection to ip:port is accepted.
bool Connects(const char* ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip, &addr.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// Issue 22, class 13: /metrics listened on every interface by default. It
// binds loopback unless told otherwise; 127.0.0.2 is loopback too (Linux
// routes 127/8 to lo) but only a wildcard bind answers there.
TEST(TrainingMetricsTest, BindsLoopbackByDefault) {
  MetricsOptions o;
  EXPECT_EQ(o.bind_address, "127.0.0.1");
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_GT((*m)->port(), 0);
  EXPECT_TRUE(Connects("127.0.0.1", (*m)->port()));
  EXPECT_FALSE(Connects("127.0.0.2", (*m)->port()));
  o.bind_address = "0.0.0.0";
  auto every = TrainingMetrics::Create(o);
  ASSERT_TRUE(every.ok()) << every.status();
  EXPECT_TRUE(Connects("127.0.0.2", (*every)->port())) << "the check above cannot tell the binds apart";
  // Every task prints a wildcard bind's URL the same way: one a person can open.
  EXPECT_EQ((*every)->Url("0.0.0.0"), absl::StrCat("http://127.0.0.1:", (*every)->port(), "/metrics"));
  EXPECT_EQ((*m)->Url("10.1.2.3"), absl::StrCat("http://10.1.2.3:", (*m)->port(), "/metrics"));
}

// civetweb's accept loop waits up to 2 s between looks at its stop flag, and
// every `train` with the server on took 1.9 s to exit after its last line.
// Destroying the metrics wakes it (listener_wake.h): the port is closed well
// within that wait, for a loopback bind and for a wildcard one (reached at
// loopback), and for a host name if civetweb takes one. The bound is a
// functional one (an exit that waits out the loop, about 2 s, fails it), not
// a speed target: the wake takes about 10 ms.
TEST(TrainingMetricsTest, DestroyingTheMetricsStopsTheServerAtOnce) {
  for (const char* bind : {"127.0.0.1", "0.0.0.0", "localhost"}) {
    MetricsOptions o;
    o.bind_address = bind;
    auto m = TrainingMetrics::Create(o);
    if (std::string(bind) == "localhost" && !m.ok()) continue;  // a numeric bind only
    ASSERT_TRUE(m.ok()) << m.status();
    const int port = (*m)->port();
    ASSERT_GT(port, 0);
    // (No connection first: one served just before the stop lets the loop see
    // the flag soon, and the test could not tell.)
    const auto start = std::chrono::steady_clock::now();
    m->reset();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 1.5) << bind;
    EXPECT_FALSE(Connects("127.0.0.1", port)) << bind;
  }
}

// A task exports only the series it sets: a ps neither trains nor saves, so
// it has no loss, steps or checkpoint time (a dashboard would read their 0s
// as a loss of 0 and a checkpoint in 1970), and the setters of what it lacks
// do nothing.
TEST(TrainingMetricsTest, APsExportsNoTrainingOrCheckpointSeries) {
  MetricsOptions o = LocalOptions();
  o.role = "ps";
  o.series.training = false;
  o.series.checkpoints = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  Exercise(m->get());
  const std::string text = (*m)->Scrape();
  for (const char* absent : {"sluice_loss", "sluice_train_steps_total", "sluice_global_step", "sluice_step_duration_seconds",
                             "sluice_input_queue_size", "sluice_checkpoint_last_success_timestamp_seconds",
                             "sluice_stale_gradients", "sluice_peers_alive", "sluice_aggregated_gradients"}) {
    EXPECT_FALSE(absl::StrContains(text, absent)) << absent << " in\n" << text;
  }
  EXPECT_EQ(Sample(text, "sluice_recoveries{role=\"ps\",task=\"3\"}"), 2) << text;
  EXPECT_TRUE(absl::StrContains(text, "sluice_build_info{")) << text;
  EXPECT_TRUE(absl::StrContains(text, "sluice_kernel_seconds_total{")) << text;
  // A worker other than the chief: training series, none of the chief's.
  MetricsOptions w = LocalOptions();
  w.series.checkpoints = false;
  w.series.health_checks = true;
  auto worker = TrainingMetrics::Create(w);
  ASSERT_TRUE(worker.ok()) << worker.status();
  Exercise(worker->get());
  const std::string worker_text = (*worker)->Scrape();
  EXPECT_TRUE(absl::StrContains(worker_text, "sluice_loss{")) << worker_text;
  EXPECT_TRUE(absl::StrContains(worker_text, "sluice_peers_alive{")) << worker_text;
  EXPECT_FALSE(absl::StrContains(worker_text, "sluice_checkpoint_last_success_timestamp_seconds")) << worker_text;
  EXPECT_FALSE(absl::StrContains(worker_text, "sluice_stale_gradients")) << worker_text;
}

// The checkpoint time appears with the first checkpoint: a 0 before it would
// read as a checkpoint made in 1970 (an alert on its age would fire).
TEST(TrainingMetricsTest, TheCheckpointTimeAppearsWithTheFirstCheckpoint) {
  MetricsOptions o = LocalOptions();
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string series = "sluice_checkpoint_last_success_timestamp_seconds{role=\"worker\",task=\"3\"}";
  EXPECT_FALSE(absl::StrContains((*m)->Scrape(), series)) << (*m)->Scrape();
  (*m)->OnCheckpointSaved(0.5, absl::FromUnixSeconds(1700000000));
  EXPECT_EQ(Sample((*m)->Scrape(), series), 1700000000);
  (*m)->OnCheckpointSaved(0.5, absl::FromUnixSeconds(1700000100));
  EXPECT_EQ(Sample((*m)->Scrape(), series), 1700000100);
}

// The loss, learning rate, global step and last step appear with the first
// step (the evaluation's series with the first evaluation): before it, a scrape of a starting (or restarted) task read them as 0,
// a run gone back to step 0 with a loss of 0.
TEST(TrainingMetricsTest, TheStepSeriesAppearWithTheFirstStep) {
  MetricsOptions o = LocalOptions();
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string id = "{role=\"worker\",task=\"3\"}";
  for (const char* name : {"sluice_loss", "sluice_learning_rate", "sluice_global_step", "sluice_last_step",
                           "sluice_eval_step"}) {
    EXPECT_FALSE(absl::StrContains((*m)->Scrape(), name + id)) << name;
  }
  EXPECT_FALSE(absl::StrContains((*m)->Scrape(), "sluice_eval_value{")) << (*m)->Scrape();
  (*m)->OnStep(128, 0.01, 0.75, 0.05);
  (*m)->SetGlobalStep(191, 600);
  const std::string text = (*m)->Scrape();
  EXPECT_EQ(Sample(text, "sluice_loss" + id), 0.75) << text;
  EXPECT_DOUBLE_EQ(Sample(text, "sluice_learning_rate" + id), 0.05) << text;
  EXPECT_EQ(Sample(text, "sluice_global_step" + id), 191) << text;
  EXPECT_EQ(Sample(text, "sluice_last_step" + id), 600) << text;
}

TEST(TrainingMetricsTest, PortInUseIsUnavailable) {
  auto a = TrainingMetrics::Create(LocalOptions());
  ASSERT_TRUE(a.ok());
  MetricsOptions o = LocalOptions();
  o.port = (*a)->port();
  auto b = TrainingMetrics::Create(o);
  EXPECT_TRUE(absl::IsUnavailable(b.status())) << b.status();
  EXPECT_TRUE(absl::StrContains(b.status().message(), "the port is in use")) << b.status();
  EXPECT_FALSE(absl::StrContains(b.status().message(), "CivetServer")) << "civetweb's words say nothing to a user";
}

// A restarted task asks for the port it served before; if another process
// holds it, the task serves on a free port instead of failing; if the port
// is free, it gets that very port.
TEST(TrainingMetricsTest, APortThatIsTakenGivesAFreeOneWhenAllowed) {
  auto a = TrainingMetrics::Create(LocalOptions());
  ASSERT_TRUE(a.ok());
  MetricsOptions o = LocalOptions();
  o.port = (*a)->port();
  o.free_port_if_taken = true;
  auto b = TrainingMetrics::Create(o);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_GT((*b)->port(), 0);
  EXPECT_NE((*b)->port(), (*a)->port());
  const testing_http::HttpResponse scraped = HttpGet((*b)->port(), "/metrics");
  EXPECT_EQ(scraped.status, 200) << scraped.headers;
  EXPECT_TRUE(absl::StrContains(scraped.body, "sluice_build_info")) << scraped.body;
  const int freed = (*a)->port();
  a->reset();
  auto c = TrainingMetrics::Create(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->port(), freed);
}

TEST(TrainingMetricsTest, PushToPushgateway) {
  MetricsOptions o = LocalOptions();
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok());
  Exercise(m->get());
  testing_http::OneShotHttpServer gateway(200);
  ASSERT_GT(gateway.port(), 0);
  PushOptions push;
  push.host = "127.0.0.1";
  push.port = absl::StrCat(gateway.port());
  absl::Status s = (*m)->Push(push);
  gateway.Join();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(absl::StartsWith(gateway.request_line(), "POST /metrics/job/worker/task/3 ")) << gateway.request_line();
  EXPECT_TRUE(absl::StrContains(gateway.body(), "sluice_train_steps_total{")) << gateway.body();

  testing_http::OneShotHttpServer failing(500);
  push.port = absl::StrCat(failing.port());
  EXPECT_TRUE(absl::IsInternal((*m)->Push(push)));
}

TEST(TrainingMetricsTest, PushToNothingIsUnavailable) {
  MetricsOptions o = LocalOptions();
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok());
  PushOptions push;
  push.host = "127.0.0.1";
  push.port = "1";  // nothing listens on port 1
  EXPECT_TRUE(absl::IsUnavailable((*m)->Push(push)));
}

// A server that accepts the connection and never answers: the push gives up
// after its timeout (libcurl alone waited for ever, and the run with it).
TEST(TrainingMetricsTest, PushToAServerThatNeverAnswersTimesOut) {
  MetricsOptions o = LocalOptions();
  o.serve = false;
  auto m = TrainingMetrics::Create(o);
  ASSERT_TRUE(m.ok());
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 4), 0);  // the kernel completes the handshake; nobody reads
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  PushOptions push;
  push.host = "127.0.0.1";
  push.port = absl::StrCat(ntohs(addr.sin_port));
  push.timeout = absl::Milliseconds(500);
  const absl::Time start = absl::Now();
  absl::Status s = (*m)->Push(push);
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "did not answer within 500ms")) << s;
  EXPECT_LT(took, absl::Seconds(5));
  close(fd);
}

std::string FindPromtool() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    std::string path = std::string(dir) + "/promtool";
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

TEST(TrainingMetricsTest, PromtoolAcceptsTheScrape) {
  const std::string promtool = FindPromtool();
  if (promtool.empty()) {
    GTEST_SKIP() << "promtool not found: install Debian's `prometheus` package (tools/setup.sh does)";
  }
  auto m = TrainingMetrics::Create(LocalOptions());
  ASSERT_TRUE(m.ok());
  Exercise(m->get());
  testing_http::HttpResponse r = HttpGet((*m)->port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  const std::string path = ::testing::TempDir() + "/scrape.prom";
  {
    std::ofstream out(path, std::ios::binary);
    out << r.body;
  }
  const std::string command = promtool + " check metrics < " + path + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) output.append(buf, n);
  const int rc = pclose(p);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << "promtool said:\n" << output << "\non:\n" << r.body;
  EXPECT_EQ(output, "") << r.body;
}

}  // namespace
}  // namespace sluice
