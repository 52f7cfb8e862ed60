// Input benchmarks (docs/PERFORMANCE.md "Input pipeline"):
//  BM_TFRecordRead/record_bytes/copy/map: reading a ~64 MB TFRecord file (page
//    cache warm) with checksums; counter frac_of_plain_read = its throughput
//    over a plain sequential read of the same file (preads of 1 MB, the
//    reader's buffer size), both timed in the same iterations. copy:0 reads
//    records as views, copy:1 copies each into a std::string (as the reader
//    op does). map:1 is the reader's default (it maps the file in 4 MB windows and
//    checks records in place); map:0 makes it read into its buffer instead,
//    the same preads as the plain read. file_state says how the file came
//    into the page cache, which decides the size of its folios there (see
//    engine/platform/env.cc): 0, this process wrote it through the Env (in
//    aligned 2 MB writes: folios of up to 2 MB); 1, the same bytes rewritten
//    in 64 KB write()s, as a program with a small buffer writes (folios of at
//    most 64 KB, which a mapping takes page by page); 2, written as in 0, then
//    dropped from the page cache (fdatasync, POSIX_FADV_DONTNEED), so that the
//    first plain read brings it back through the kernel's readahead, as for a
//    file read from disk; 3, dropped as in 2, then read once by the reader
//    before the timed iterations (training's first epoch over a file on
//    disk; counter first_pass_bytes_per_s, in wall time), so the iterations
//    measure the later epochs. With file_state 0 and 1 the reader's first
//    pass in the process, before the timed iterations, is timed beside a
//    plain read too (counter first_pass_frac): the reader keeps a file's
//    mapping for later passes (engine/platform/mapping_cache.h), so the
//    first pass alone pays for mapping the file.
//    Both sides are timed in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID:
//    user + kernel, so the pread copies count), so time spent waiting for a
//    core on this shared machine counts for neither; with the file in the page
//    cache there is no I/O wait to hide.
//  BM_Crc32c/bytes/copy: the checksum alone (and with the copy into the record).
//  BM_FashionPipeline: batches/s of TFRecord -> ParseExample -> DecodeRaw ->
//    ImageToFloat -> RandomShuffleQueue -> DequeueMany(128), with 1 or 2
//    enqueue threads, reading one record per enqueue step (read_up_to:1,
//    ReaderRead) or up to 128 (ReaderReadUpTo + QueueEnqueueMany), on
//    Fashion-MNIST converted like cmd/records does (synthetic images when the
//    dataset is not installed).
//  BM_TextCorpusRead/test_split: reading a text corpus into one split's ids
//    (text::ReadTokenStream: read every file, tokenize, split rule,
//    lowercase, vocabulary lookup), the work TextWindowReader does once per
//    open, on the fortunes package (/usr/share/games/fortunes), or a
//    synthetic corpus of about its size when it is not installed. ids_per_s
//    counts the split's ids (with <eos>); frac_of_wc is its speed over a
//    plain read of the same files counting whitespace-separated words, timed
//    in the same iterations; both in thread CPU time.
//  BM_TextPipeline: batches/s (and tokens/s) of TextWindowReader ->
//    DecodeRaw -> Slice (tokens, targets) -> RandomShuffleQueue ->
//    DequeueMany(128) at seq_len 35, the graph models/input_pipeline.cc builds
//    for a `text` input, on the same corpus.
//  BM_ShuffleQueueDequeueMany/batch: one DequeueMany of `batch` Fashion-MNIST
//    sized elements (uint8 [28, 28, 1] and an int64 label) from a
//    RandomShuffleQueue holding 20,000 (fashion configs' capacity), the
//    elements then enqueued back (untimed) so that the queue stays full:
//    the random gather from a 15 MB store that starts each training step.
//   bazel run //inputs:inputs_bench
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "engine/runtime/session.h"
#include "engine/platform/crc32c.h"
#include "inputs/example.pb.h"
#include "inputs/fifo_queue.h"
#include "inputs/idx.h"
#include "inputs/input_builders.h"
#include "inputs/text.h"
#include "engine/platform/record_reader.h"
#include "engine/platform/record_writer.h"

namespace sluice {
namespace {

std::string TmpDir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

void Check(const absl::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "inputs_bench: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

std::string WriteRecordFile(size_t record_bytes, int file_state) {
  std::string path = absl::StrCat(TmpDir(), "/sluice_bench_", record_bytes, ".tfrecord");
  auto file = Env::Default()->NewWritableFile(path);
  Check(file.status());
  RecordWriter w(file->get());
  std::mt19937 rng(1);
  std::string rec(record_bytes, '\0');
  for (char& c : rec) c = static_cast<char>(rng());
  const size_t n = (64u << 20) / (record_bytes + 16);
  for (size_t i = 0; i < n; ++i) {
    rec[i % record_bytes] ^= 1;
    Check(w.WriteRecord(rec));
  }
  Check(w.Close());
  if (file_state == 1) {
    auto bytes = ReadFileToString(Env::Default(), path, 1 << 30);
    Check(bytes.status());
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) Check(absl::InternalError(absl::StrCat("open ", path)));
    for (size_t at = 0; at < bytes->size(); at += 65536) {
      const size_t n = std::min<size_t>(65536, bytes->size() - at);
      if (::write(fd, bytes->data() + at, n) != static_cast<ssize_t>(n)) {
        Check(absl::InternalError(absl::StrCat("write ", path)));
      }
    }
    ::close(fd);
  }
  if (file_state == 2 || file_state == 3) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0 || ::fdatasync(fd) != 0 || ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
      Check(absl::InternalError(absl::StrCat("dropping ", path, " from the page cache")));
    }
    ::close(fd);
  }
  return path;
}

// Seconds of CPU time this thread has used (user and kernel).
double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Reads every record of `file` (copy: each into a std::string, as the reader
// op does; else as views) and returns how many there were.
int64_t ReadAllRecords(RandomAccessFile* file, const RecordReaderOptions& options, bool copy) {
  SequentialRecordReader reader(file, options);
  std::string rec;
  absl::string_view view;
  absl::Status s;
  int64_t n = 0;
  if (copy) {
    while ((s = reader.ReadRecord(&rec)).ok()) ++n;
  } else {
    while ((s = reader.ReadRecord(&view)).ok()) ++n;
  }
  if (!absl::IsOutOfRange(s)) Check(s);
  return n;
}

void BM_TFRecordRead(benchmark::State& state) {
  const size_t record_bytes = static_cast<size_t>(state.range(0));
  const bool copy = state.range(1) != 0;
  RecordReaderOptions options;
  options.map_file = state.range(2) != 0;
  const std::string path = WriteRecordFile(record_bytes, static_cast<int>(state.range(3)));
  auto file = Env::Default()->NewRandomAccessFile(path);
  Check(file.status());
  auto size = Env::Default()->GetFileSize(path);
  Check(size.status());
  if (state.range(3) == 3) {
    // The first pass over the file is the reader's, as in training's first
    // epoch over a file on disk: the page cache then holds the file as the
    // reader's own faults or reads brought it in. Its speed (wall time, so
    // the disk's too) is first_pass_bytes_per_s.
    const auto t0 = std::chrono::steady_clock::now();
    ReadAllRecords(file->get(), options, /*copy=*/false);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.counters["first_pass_bytes_per_s"] = static_cast<double>(*size) / secs;
  }
  // The plain read uses the reader's buffer size (with map:0 both make the same reads).
  std::string scratch(options.buffer_bytes, '\0');
  auto plain_read = [&] {
    uint64_t offset = 0, sum = 0;
    while (true) {
      absl::string_view got;
      Check((*file)->Read(offset, scratch.size(), &got, scratch.data()));
      if (got.empty()) break;
      sum += static_cast<uint8_t>(got[0]);
      offset += got.size();
    }
    benchmark::DoNotOptimize(sum);
  };
  if (state.range(3) == 0 || state.range(3) == 1) {
    // The reader's first pass over the file in this process, beside a plain
    // read (CPU time, as below): this process has not mapped the file yet
    // (the last run deleted its file through the Env, which drops it from
    // engine/platform/mapping_cache.h), so the faults and page tables of its
    // mapping are paid here. The timed iterations are the later passes,
    // as training's later epochs.
    const double t0 = ThreadCpuSeconds();
    plain_read();
    const double t1 = ThreadCpuSeconds();
    ReadAllRecords(file->get(), options, copy);
    state.counters["first_pass_frac"] = (t1 - t0) / (ThreadCpuSeconds() - t1);
  }
  double plain_s = 0, record_s = 0;
  int64_t records = 0;
  for (auto _ : state) {
    const double t0 = ThreadCpuSeconds();
    plain_read();
    const double t1 = ThreadCpuSeconds();
    const int64_t n = ReadAllRecords(file->get(), options, copy);
    const double t2 = ThreadCpuSeconds();
    records += n;
    plain_s += t1 - t0;
    const double r = t2 - t1;
    record_s += r;
    state.SetIterationTime(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(*size));
  state.counters["records_per_s"] = benchmark::Counter(static_cast<double>(records) / record_s);
  state.counters["frac_of_plain_read"] = plain_s / record_s;
  state.counters["plain_read_bytes_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(*size) / plain_s);
  Env::Default()->DeleteFile(path).IgnoreError();
}
BENCHMARK(BM_TFRecordRead)
    ->ArgNames({"record_bytes", "copy", "map", "file_state"})
    ->ArgsProduct({{1024, 3072}, {0, 1}, {1, 0}, {0}})
    ->ArgsProduct({{1024}, {0}, {1, 0}, {1, 2, 3}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Fashion-MNIST train split as 4 TFRecord shards of Examples {image, label}.
std::vector<std::string> FashionShards() {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  IdxFile images, labels;
  auto im = ReadIdxFile(Env::Default(), dir + "train-images-idx3-ubyte.gz");
  auto lb = ReadIdxFile(Env::Default(), dir + "train-labels-idx1-ubyte.gz");
  if (im.ok() && lb.ok()) {
    images = std::move(im).value();
    labels = std::move(lb).value();
  } else {
    std::fprintf(stderr, "inputs_bench: Fashion-MNIST not installed, using synthetic images\n");
    images.dtype = labels.dtype = DT_UINT8;
    images.dims = {60000, 28, 28};
    labels.dims = {60000};
    std::mt19937 rng(2);
    images.data.resize(60000 * 784);
    for (char& c : images.data) c = static_cast<char>(rng());
    labels.data.resize(60000);
    for (char& c : labels.data) c = static_cast<char>(rng() % 10);
  }
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<WritableFile>> files;
  std::vector<std::unique_ptr<RecordWriter>> writers;
  for (int s = 0; s < 4; ++s) {
    paths.push_back(absl::StrCat(TmpDir(), "/sluice_bench_fashion_", s, ".tfrecord"));
    auto f = Env::Default()->NewWritableFile(paths.back());
    Check(f.status());
    files.push_back(std::move(f).value());
    writers.push_back(std::make_unique<RecordWriter>(files.back().get()));
  }
  Example e;
  auto* fmap = e.mutable_features()->mutable_feature();
  for (int64_t i = 0; i < images.num_items(); ++i) {
    (*fmap)["image"].mutable_bytes_list()->clear_value();
    (*fmap)["image"].mutable_bytes_list()->add_value(std::string(images.item(i)));
    (*fmap)["label"].mutable_int64_list()->clear_value();
    (*fmap)["label"].mutable_int64_list()->add_value(static_cast<uint8_t>(labels.item(i)[0]));
    Check(writers[i % 4]->WriteRecord(e.SerializeAsString()));
  }
  for (auto& w : writers) Check(w->Close());
  return paths;
}

// The record checksum alone: CRC32C of n bytes (copy:1 also copies them, as ReadRecord
// into a string does), from L1/L2-resident buffers.
void BM_Crc32c(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const bool copy = state.range(1) != 0;
  std::string src(n, '\0'), dst(n, '\0');
  std::mt19937 rng(2);
  for (char& c : src) c = static_cast<char>(rng());
  for (auto _ : state) {
    uint32_t c = copy ? crc32c::ExtendAndCopy(0, src.data(), n, &dst[0]) : crc32c::Value(src.data(), n);
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_Crc32c)->ArgNames({"bytes", "copy"})->ArgsProduct({{1024, 3072, 65536}, {0, 1}});

void BM_FashionPipeline(benchmark::State& state) {
  const std::vector<std::string> files = FashionShards();
  GraphDef graph;
  InputGraph in(&graph, "bench_fashion");
  ProducerOptions p;
  p.seed = 1;
  auto queue = AddStringInputProducer(&in, files, p);
  Check(queue.status());
  // read_up_to 1: one record per enqueue step (ReaderRead, ParseSingleExample,
  // QueueEnqueue); N: up to N records per step (ReaderReadUpTo, ParseExample
  // of the vector, QueueEnqueueMany).
  const int64_t up_to = state.range(1);
  const std::vector<FeatureSpec> features = {{"image", DT_STRING, TensorShape({})},
                                             {"label", DT_INT64, TensorShape({})}};
  std::vector<std::string> parsed;
  if (up_to == 1) {
    auto kv = AddReaderRead(&in, "TFRecordReader", *queue, "reader");
    parsed = AddParseSingleExample(&in, kv.second, features, "parse");
  } else {
    auto kv = AddReaderReadUpTo(&in, "TFRecordReader", *queue, up_to, "reader");
    parsed = AddParseExample(&in, kv.second, features, "parse");
  }
  std::string pixels = in.AddNode("decode", "DecodeRaw", {parsed[0]}, {{"out_type", MakeAttr(DT_UINT8)}});
  std::string image = in.AddNode("scale", "ImageToFloat", {pixels});
  BatchOptions b;
  b.batch_size = 128;
  b.capacity = 5000;
  b.min_after_dequeue = 2000;
  b.shuffle = true;
  b.seed = 1;
  b.num_threads = static_cast<int>(state.range(0));
  b.enqueue_many = up_to > 1;
  auto batch = AddBatch(&in, {{image, DT_FLOAT, TensorShape({784})}, {parsed[1], DT_INT64, TensorShape({})}}, b);
  Check(batch.status());
  auto session = NewSession();
  Check(session.status());
  Check((*session)->Create(graph));
  Coordinator coord;
  std::vector<std::unique_ptr<QueueRunner>> runners;
  for (const auto& def : in.runners) {
    auto r = QueueRunner::New(def);
    Check(r.status());
    Check((*r)->Start(session->get(), &coord));
    runners.push_back(std::move(r).value());
  }
  std::vector<Tensor> out;
  for (int i = 0; i < 20; ++i) Check((*session)->Run({}, *batch, {}, &out));  // fill the buffer
  for (auto _ : state) {
    Check((*session)->Run({}, *batch, {}, &out));
    benchmark::DoNotOptimize(out[0].raw_data());
  }
  state.SetItemsProcessed(state.iterations() * 128);
  state.counters["batches_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kIsRate);
  coord.RequestStop();
  Check(coord.Join());
  runners.clear();
  Session::Reset({"bench_fashion"});
  for (const auto& f : files) Env::Default()->DeleteFile(f).IgnoreError();
}
BENCHMARK(BM_FashionPipeline)
    ->ArgNames({"reader_threads", "read_up_to"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({1, 128})
    ->Args({2, 128})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The fortunes package's files, or a synthetic corpus of ~550k tokens.
text::Corpus BenchCorpus() {
  text::Corpus c;
  auto files = text::ExpandFiles(Env::Default(), {"/usr/share/games/fortunes/*"}, {"*.dat", "*.u8"});
  if (files.ok()) {
    c.files = *files;
    c.format = text::Format::kFortunes;
    return c;
  }
  std::fprintf(stderr, "inputs_bench: no fortunes package (%s); a synthetic corpus instead\n",
               files.status().ToString().c_str());
  std::mt19937 rng(1);
  std::string lines;
  for (int sentence = 0; sentence < 30000; ++sentence) {
    const int n = 5 + static_cast<int>(rng() % 25);
    for (int w = 0; w < n; ++w) {
      const uint32_t r = rng() % 1000;
      absl::StrAppend(&lines, "w", r * r / 50, w + 1 < n ? " " : ".\n");  // Zipf-ish
    }
  }
  const std::string path = TmpDir() + "/sluice_bench_corpus.txt";
  Check(WriteStringToFile(Env::Default(), path, lines));
  c.files = {path};
  c.format = text::Format::kLines;
  return c;
}

// Seconds of the thread's CPU time (user + kernel), as BM_TFRecordRead.
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void BM_TextCorpusRead(benchmark::State& state) {
  const text::Corpus corpus = BenchCorpus();
  const text::Split split = state.range(0) == 0 ? text::Split::kTrain : text::Split::kTest;
  auto vocabulary = text::BuildVocabulary(Env::Default(), corpus, text::Split::kTrain, 10000, 1);
  Check(vocabulary.status());
  int64_t ids = 0, bytes = 0, words = 0;
  double pass_s = 0, wc_s = 0;
  for (auto _ : state) {
    // One reader open: every file read and tokenized, this split's ids kept.
    double t0 = ThreadSeconds();
    auto stream = text::ReadTokenStream(Env::Default(), corpus, split, *vocabulary);
    Check(stream.status());
    benchmark::DoNotOptimize(stream->ids.data());
    ids += static_cast<int64_t>(stream->ids.size());
    double t1 = ThreadSeconds();
    // The floor: the same files read whole and their whitespace-separated
    // words counted (what `wc -w` does).
    for (const std::string& f : corpus.files) {
      auto contents = ReadFileToString(Env::Default(), f);
      Check(contents.status());
      bool in_word = false;
      for (char c : *contents) {
        const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        words += !space && !in_word;
        in_word = !space;
      }
      bytes += static_cast<int64_t>(contents->size());
    }
    double t2 = ThreadSeconds();
    pass_s += t1 - t0;
    wc_s += t2 - t1;
  }
  state.counters["ids_per_s"] = static_cast<double>(ids) / pass_s;
  state.counters["corpus_bytes_per_s"] = static_cast<double>(bytes) / pass_s;
  state.counters["wc_bytes_per_s"] = static_cast<double>(bytes) / wc_s;
  state.counters["frac_of_wc"] = wc_s / pass_s;
  state.counters["split_ids"] = static_cast<double>(ids / state.iterations());
  state.counters["wc_words"] = static_cast<double>(words / state.iterations());
}
BENCHMARK(BM_TextCorpusRead)->ArgName("test_split")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TextPipeline(benchmark::State& state) {
  const text::Corpus corpus = BenchCorpus();
  auto vocabulary = text::BuildVocabulary(Env::Default(), corpus, text::Split::kTrain, 10000, 1);
  Check(vocabulary.status());
  const int64_t seq_len = 35, batch_size = 128;
  GraphDef graph;
  InputGraph in(&graph, "bench_text");
  ProducerOptions p;
  p.shuffle = false;
  auto work = AddStringInputProducer(&in, {"train"}, p);
  Check(work.status());
  auto kv = AddReaderReadUpTo(&in, "TextWindowReader", *work, batch_size, "reader",
                              {{"files", MakeAttr(corpus.files)},
                               {"format", MakeAttr(corpus.format == text::Format::kFortunes ? "fortunes" : "lines")},
                               {"seq_len", MakeAttr(seq_len)},
                               {"vocabulary", MakeAttr(vocabulary->words())}});
  std::string ids = in.AddNode("decode", "DecodeRaw", {kv.second}, {{"out_type", MakeAttr(DT_INT64)}});
  std::string rows = in.AddNode("rows", "Reshape", {ids, in.AddConst("dims", Tensor::FromVector<int32_t>({-1, seq_len + 1}))},
                                {{"T", MakeAttr(DT_INT64)}, {"Tshape", MakeAttr(DT_INT32)}});
  std::string size = in.AddConst("size", Tensor::FromVector<int32_t>({-1, seq_len}));
  std::string tokens = in.AddNode("tokens", "Slice", {rows, in.AddConst("b0", Tensor::FromVector<int32_t>({0, 0})), size},
                                  {{"T", MakeAttr(DT_INT64)}, {"Index", MakeAttr(DT_INT32)}});
  std::string targets = in.AddNode("targets", "Slice", {rows, in.AddConst("b1", Tensor::FromVector<int32_t>({0, 1})), size},
                                   {{"T", MakeAttr(DT_INT64)}, {"Index", MakeAttr(DT_INT32)}});
  BatchOptions b;
  b.batch_size = static_cast<int32_t>(batch_size);
  b.capacity = 5000;
  b.min_after_dequeue = 2000;
  b.shuffle = true;
  b.seed = 1;
  b.enqueue_many = true;
  auto batch = AddBatch(&in, {{tokens, DT_INT64, TensorShape({seq_len})}, {targets, DT_INT64, TensorShape({seq_len})}}, b);
  Check(batch.status());
  auto session = NewSession();
  Check(session.status());
  Check((*session)->Create(graph));
  Coordinator coord;
  std::vector<std::unique_ptr<QueueRunner>> runners;
  for (const auto& def : in.runners) {
    auto r = QueueRunner::New(def);
    Check(r.status());
    Check((*r)->Start(session->get(), &coord));
    runners.push_back(std::move(r).value());
  }
  std::vector<Tensor> out;
  for (int i = 0; i < 20; ++i) Check((*session)->Run({}, *batch, {}, &out));  // fill the buffer
  for (auto _ : state) {
    Check((*session)->Run({}, *batch, {}, &out));
    benchmark::DoNotOptimize(out[0].raw_data());
  }
  state.counters["batches_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kIsRate);
  state.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(state.iterations() * batch_size * seq_len),
                                                      benchmark::Counter::kIsRate);
  coord.RequestStop();
  Check(coord.Join());
  runners.clear();
  Session::Reset({"bench_text"});
}
BENCHMARK(BM_TextPipeline)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ShuffleQueueDequeueMany(benchmark::State& state) {
  const int32_t batch = static_cast<int32_t>(state.range(0));
  constexpr int32_t kCapacity = 20000;
  auto q = RandomShuffleQueue::Create("bench_shuffle", kCapacity, 0, 1, 2, {DT_UINT8, DT_INT64},
                                      {PartialShape({28, 28, 1}), PartialShape({})});
  Check(q.status());
  auto enqueue = [&](QueueBase::Tuple tuple) {
    absl::Status status = absl::InternalError("the enqueue did not finish at once");
    (*q)->TryEnqueueMany(tuple, nullptr, [&status](const absl::Status& s) { status = s; });
    Check(status);
  };
  {
    Tensor images(DT_UINT8, TensorShape({kCapacity, 28, 28, 1}));
    Tensor labels(DT_INT64, TensorShape({kCapacity}));
    std::mt19937 rng(7);
    for (int64_t i = 0; i < images.NumElements(); ++i) images.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
    for (int64_t i = 0; i < kCapacity; ++i) labels.data<int64_t>()[i] = i % 10;
    enqueue({images, labels});
  }
  for (auto _ : state) {
    QueueBase::Tuple got;
    absl::Status status = absl::InternalError("the dequeue did not finish at once");
    (*q)->TryDequeueMany(batch, false, nullptr, [&](const absl::Status& s, QueueBase::Tuple t) {
      status = s;
      got = std::move(t);
    });
    Check(status);
    state.PauseTiming();
    enqueue(std::move(got));
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * batch * (28 * 28 + 8));
}
BENCHMARK(BM_ShuffleQueueDequeueMany)->ArgName("batch")->Arg(128)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice
