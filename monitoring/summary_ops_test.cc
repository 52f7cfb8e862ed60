// The summary ops run through a Session (engine/runtime/session.h), checked value by value:
// tags, simple values, histogram statistics and TensorFlow's default bucket limits, PNG pixels
// decoded back with libpng, float-image normalization, merging, and every error path. The last
// test writes each op's output with EventWriter and reads it back with the independent decoder.
#include <png.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "absl/strings/match.h"
#include "engine/graph/graph_def_builder.h"
#include "engine/runtime/session.h"
#include "gtest/gtest.h"
#include "monitoring/event_file_reader_testlib.h"
#include "monitoring/event_writer.h"
#include "monitoring/histogram.h"
#include "monitoring/summary.pb.h"

namespace sluice {
namespace {

Tensor Strings(const std::vector<std::string>& v, TensorShape shape) {
  return Tensor::FromVector<tstring>(absl::MakeConstSpan(v), shape);
}

// Runs `b`'s graph with `feeds`, fetching one summary and parsing it.
absl::StatusOr<Summary> RunSummary(const GraphDefBuilder& b, const std::string& fetch,
                                   const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
  auto session = NewSession();
  if (!session.ok()) return session.status();
  absl::Status s = (*session)->Create(b.graph());
  if (!s.ok()) return s;
  std::vector<Tensor> out;
  s = (*session)->Run(feeds, {fetch}, {}, &out);
  if (!s.ok()) return s;
  if (out.size() != 1 || out[0].dtype() != DT_STRING || out[0].NumElements() != 1) {
    return absl::InternalError("summary output is not a scalar string: " + out[0].DebugString());
  }
  Summary summary;
  if (!summary.ParseFromString(out[0].scalar<tstring>())) return absl::InternalError("summary does not parse");
  return summary;
}

// The default limits, built here independently of monitoring/histogram.cc.
std::vector<double> ExpectedDefaultLimits() {
  std::vector<double> pos;
  for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
  std::vector<double> all = {-DBL_MAX};
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
  all.push_back(0.0);
  all.insert(all.end(), pos.begin(), pos.end());
  all.push_back(DBL_MAX);
  return all;
}

TEST(HistogramTest, DefaultBucketLimitsMatchTensorFlow) {
  const std::vector<double>& limits = Histogram::DefaultBucketLimits();
  EXPECT_EQ(limits, ExpectedDefaultLimits());
  ASSERT_EQ(limits.size(), 1551u);  // 774 exponential limits each side, 0, +-DBL_MAX
  EXPECT_EQ(limits[775], 0.0);
  EXPECT_EQ(limits[776], 1e-12);
  EXPECT_GE(limits[1549], 1e20 / 1.1);
  EXPECT_LT(limits[1549], 1e20);
}

TEST(HistogramTest, EncodingCollapsesEmptyRuns) {
  Histogram h(std::vector<double>{0, 1, 2, 3, 4});
  h.Add(-1);   // bucket 0 (limit 0)
  h.Add(2);    // bucket 3 (limit 3): [2, 3)
  h.Add(2.5);  // bucket 3
  HistogramProto p;
  h.EncodeToProto(&p, false);
  // Buckets: [0]=1, [1]=0 and [2]=0 collapse to one (limit 2), [3]=2, [4]=0 alone (limit 4).
  EXPECT_EQ(std::vector<double>(p.bucket_limit().begin(), p.bucket_limit().end()), (std::vector<double>{0, 2, 3, 4}));
  EXPECT_EQ(std::vector<double>(p.bucket().begin(), p.bucket().end()), (std::vector<double>{1, 0, 2, 0}));
  h.EncodeToProto(&p, true);
  EXPECT_EQ(p.bucket_size(), 5);
  Histogram empty;
  empty.EncodeToProto(&p, false);
  // One run of empty buckets ending at DBL_MAX.
  ASSERT_EQ(p.bucket_size(), 1);
  EXPECT_EQ(p.bucket_limit(0), DBL_MAX);
  EXPECT_EQ(p.bucket(0), 0);
  EXPECT_EQ(p.num(), 0);
}

TEST(ScalarSummaryTest, OneValuePerTag) {
  GraphDefBuilder b;
  std::string tags = b.Const("tags", Strings({"loss", "accuracy"}, TensorShape({2})));
  std::string values = b.Const("values", Tensor::FromVector<double>({0.5, 0.875}));
  b.Node("s", "ScalarSummary", {tags, values}, {{"T", MakeAttr(DT_DOUBLE)}});
  auto s = RunSummary(b, "s");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 2);
  EXPECT_EQ(s->value(0).tag(), "loss");
  EXPECT_EQ(s->value(0).simple_value(), 0.5f);
  EXPECT_EQ(s->value(1).tag(), "accuracy");
  EXPECT_EQ(s->value(1).simple_value(), 0.875f);
}

TEST(ScalarSummaryTest, IntegerAndHalfValues) {
  for (DataType dt : {DT_INT32, DT_INT64, DT_HALF, DT_UINT8}) {
    GraphDefBuilder b;
    std::string tags = b.Const("tags", Strings({"x"}, TensorShape({})));
    Tensor v;
    switch (dt) {
      case DT_INT32: v = Tensor::Scalar<int32_t>(7); break;
      case DT_INT64: v = Tensor::Scalar<int64_t>(7); break;
      case DT_HALF: v = Tensor::Scalar<half>(half(7.0f)); break;
      default: v = Tensor::Scalar<uint8_t>(7); break;
    }
    std::string values = b.Const("v", v);
    b.Node("s", "ScalarSummary", {tags, values}, {{"T", MakeAttr(dt)}});
    auto s = RunSummary(b, "s");
    ASSERT_TRUE(s.ok()) << DataTypeString(dt) << ": " << s.status();
    EXPECT_EQ(s->value(0).simple_value(), 7.0f);
  }
}

TEST(ScalarSummaryTest, ShapeMismatchIsAnError) {
  GraphDefBuilder b;
  std::string tags = b.Placeholder("tags", DT_STRING);
  std::string values = b.Placeholder("values", DT_FLOAT);
  b.Node("s", "ScalarSummary", {tags, values}, {{"T", MakeAttr(DT_FLOAT)}});
  auto s = RunSummary(b, "s",
                      {{"tags", Strings({"a", "b"}, TensorShape({2}))}, {"values", Tensor::FromVector<float>({1})}});
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "not the same shape")) << s.status();
}

TEST(HistogramSummaryTest, MatchesHistogramAndDefaultLimits) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"w"}, TensorShape({})));
  std::string values = b.Placeholder("values", DT_DOUBLE);
  b.Node("h", "HistogramSummary", {tag, values}, {{"T", MakeAttr(DT_DOUBLE)}});
  // Doubles, so 1e-12 is exactly the first positive limit (1e-12f would fall just below it).
  std::vector<double> v = {-2.0, -2.0, 0.0, 1e-12, 0.3, 1.0, 1000.0};
  auto s = RunSummary(b, "h", {{"values", Tensor::FromVector<double>(v)}});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 1);
  EXPECT_EQ(s->value(0).tag(), "w");
  const HistogramProto& p = s->value(0).histo();
  EXPECT_EQ(p.num(), 7);
  EXPECT_EQ(p.min(), -2.0);
  EXPECT_EQ(p.max(), 1000.0);
  double sum = 0, sq = 0;
  for (double x : v) {
    sum += x;
    sq += x * x;
  }
  EXPECT_DOUBLE_EQ(p.sum(), sum);
  EXPECT_DOUBLE_EQ(p.sum_squares(), sq);
  // Expand the collapsed encoding back onto the default table and compare counts per bucket,
  // with each value placed by hand: bucket i holds [limit[i-1], limit[i]).
  const std::vector<double> limits = ExpectedDefaultLimits();
  std::vector<double> expected(limits.size(), 0), got(limits.size(), 0);
  for (double x : v) {
    size_t i = 0;
    while (!(x < limits[i])) ++i;
    expected[i] += 1;
  }
  size_t li = 0;
  for (int k = 0; k < p.bucket_size(); ++k) {
    while (li < limits.size() && limits[li] != p.bucket_limit(k)) ++li;
    ASSERT_LT(li, limits.size()) << "bucket limit " << p.bucket_limit(k) << " is not a default limit, in order";
    got[li] = p.bucket(k);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(p.bucket_limit(p.bucket_limit_size() - 1), DBL_MAX);
  // 0 sits in the bucket that ends at 1e-12, and 1e-12 itself in the next one.
  EXPECT_EQ(got[776], 1);
  EXPECT_EQ(got[777], 1);
}

TEST(HistogramSummaryTest, NanAndInfinityAreErrors) {
  // The error names the first bad value's kind (float32 checks all values in one pass first).
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::vector<float>, std::string>> cases = {
      {{1.0f, nan}, "Nan in summary histogram for: w"},
      {{1.0f, inf}, "Infinity in summary histogram for: w"},
      {{-inf, 2.0f}, "Infinity in summary histogram for: w"},
      {{1.0f, inf, nan}, "Infinity in summary histogram for: w"},
      {{nan, inf, 3.0f}, "Nan in summary histogram for: w"},
  };
  for (const auto& [v, message] : cases) {
    GraphDefBuilder b;
    std::string tag = b.Const("tag", Strings({"w"}, TensorShape({})));
    std::string values = b.Placeholder("values", DT_FLOAT);
    b.Node("h", "HistogramSummary", {tag, values}, {{"T", MakeAttr(DT_FLOAT)}});
    auto s = RunSummary(b, "h", {{"values", Tensor::FromVector<float>(v)}});
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
    EXPECT_TRUE(absl::StrContains(s.status().message(), message)) << s.status() << " (want " << message << ")";
  }
  // The largest finite floats are values, not errors.
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"w"}, TensorShape({})));
  std::string values = b.Placeholder("values", DT_FLOAT);
  b.Node("h", "HistogramSummary", {tag, values}, {{"T", MakeAttr(DT_FLOAT)}});
  auto s = RunSummary(b, "h", {{"values", Tensor::FromVector<float>({FLT_MAX, -FLT_MAX})}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value(0).histo().num(), 2);
}

TEST(HistogramSummaryTest, DefaultTypeIsFloatAndIntsWork) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"ids"}, TensorShape({})));
  std::string values = b.Const("values", Tensor::FromVector<int64_t>({1, 2, 2, 3}));
  b.Node("h", "HistogramSummary", {tag, values}, {{"T", MakeAttr(DT_INT64)}});
  auto s = RunSummary(b, "h");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value(0).histo().num(), 4);
  EXPECT_EQ(s->value(0).histo().sum(), 8);
}

// Decodes PNG bytes with libpng's simplified API into 8-bit pixels of `channels` channels.
bool DecodePng(const std::string& png, int channels, int* w, int* h, std::vector<uint8_t>* pixels) {
  png_image image;
  memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, png.data(), png.size())) return false;
  static const png_uint_32 kFormats[] = {PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  image.format = kFormats[channels - 1];
  pixels->resize(PNG_IMAGE_SIZE(image));
  *w = image.width;
  *h = image.height;
  return png_image_finish_read(&image, nullptr, pixels->data(), 0, nullptr) != 0;
}

TEST(ImageSummaryTest, Uint8ImagesBecomePngs) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"digits"}, TensorShape({})));
  // 4 images of 2x3 RGB; max_images 2 keeps the first two.
  std::vector<uint8_t> pixels(4 * 2 * 3 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 3);
  std::string images = b.Const("images", Tensor::FromVector<uint8_t>(pixels, TensorShape({4, 2, 3, 3})));
  b.Node("img", "ImageSummary", {tag, images}, {{"T", MakeAttr(DT_UINT8)}, {"max_images", MakeAttr(2)}});
  auto s = RunSummary(b, "img");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 2);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(s->value(i).tag(), absl::StrCat("digits/image/", i));
    const Summary::Image& img = s->value(i).image();
    EXPECT_EQ(img.height(), 2);
    EXPECT_EQ(img.width(), 3);
    EXPECT_EQ(img.colorspace(), 3);
    int w, h;
    std::vector<uint8_t> decoded;
    ASSERT_TRUE(DecodePng(img.encoded_image_string(), 3, &w, &h, &decoded));
    EXPECT_EQ(w, 3);
    EXPECT_EQ(h, 2);
    EXPECT_EQ(decoded, std::vector<uint8_t>(pixels.begin() + i * 18, pixels.begin() + (i + 1) * 18));
  }
}

std::vector<uint8_t> RunGrayFloatImage(const std::vector<float>& values, const std::string& expect_tag) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"f"}, TensorShape({})));
  std::string images = b.Const(
      "images", Tensor::FromVector<float>(values, TensorShape({1, 1, static_cast<int64_t>(values.size()), 1})));
  b.Node("img", "ImageSummary", {tag, images}, {{"T", MakeAttr(DT_FLOAT)}});  // max_images default 3
  auto s = RunSummary(b, "img");
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return {};
  EXPECT_EQ(s->value(0).tag(), expect_tag);
  int w, h;
  std::vector<uint8_t> decoded;
  EXPECT_TRUE(DecodePng(s->value(0).image().encoded_image_string(), 1, &w, &h, &decoded));
  return decoded;
}

TEST(ImageSummaryTest, FloatNormalizationAndBadColor) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // All >= 0: scale by 255 / max; NaN takes bad_color's first channel (255 of opaque red).
  EXPECT_EQ(RunGrayFloatImage({0.0f, 0.5f, 1.0f, nan}, "f/image/0"), (std::vector<uint8_t>{0, 127, 255, 255}));
  // Negatives: 127 / max|v|, then + 128.
  EXPECT_EQ(RunGrayFloatImage({-1.0f, 0.0f, 1.0f}, "f/image/0"), (std::vector<uint8_t>{1, 128, 255}));
  // All zero: scale 0.
  EXPECT_EQ(RunGrayFloatImage({0.0f, 0.0f}, "f/image/0"), (std::vector<uint8_t>{0, 0}));
}

TEST(ImageSummaryTest, SingleImageTagAndCustomBadColor) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"one"}, TensorShape({})));
  const float inf = std::numeric_limits<float>::infinity();
  std::string images = b.Const("images", Tensor::FromVector<float>({1, 0, 0, inf, 0, 0}, TensorShape({1, 1, 2, 3})));
  AttrValue bad;
  Tensor::FromVector<uint8_t>({9, 8, 7}).AsProtoTensorContent(bad.mutable_tensor());
  b.Node("img", "ImageSummary", {tag, images},
         {{"T", MakeAttr(DT_FLOAT)}, {"max_images", MakeAttr(1)}, {"bad_color", bad}});
  auto s = RunSummary(b, "img");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->value(0).tag(), "one/image");
  int w, h;
  std::vector<uint8_t> decoded;
  ASSERT_TRUE(DecodePng(s->value(0).image().encoded_image_string(), 3, &w, &h, &decoded));
  EXPECT_EQ(decoded, (std::vector<uint8_t>{255, 0, 0, 9, 8, 7}));
}

TEST(ImageSummaryTest, BadShapesAreErrors) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"t"}, TensorShape({})));
  std::string images = b.Placeholder("images", DT_UINT8);
  b.Node("img", "ImageSummary", {tag, images}, {{"T", MakeAttr(DT_UINT8)}});
  for (TensorShape shape : {TensorShape({2, 2, 2}), TensorShape({1, 2, 2, 2})}) {
    std::vector<uint8_t> zeros(shape.num_elements());
    auto s = RunSummary(b, "img", {{"images", Tensor::FromVector<uint8_t>(zeros, shape)}});
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << shape.DebugString() << ": " << s.status();
  }
}

// Issue 22, class 6: the image buffer was sized from h * w * depth before the
// batch was looked at, so a zero-batch [0, 2^24-1, 2^24-1, 4] tensor (no
// bytes at all) asked for 2^50 bytes and the process died. It is an empty
// summary; the buffer never outgrows the tensor.
TEST(ImageSummaryTest, EmptyBatchOfHugeImagesIsAnEmptySummary) {
  GraphDefBuilder b;
  std::string tag = b.Const("tag", Strings({"t"}, TensorShape({})));
  std::string images = b.Placeholder("images", DT_UINT8);
  b.Node("img", "ImageSummary", {tag, images}, {{"T", MakeAttr(DT_UINT8)}});
  const int64_t side = (int64_t{1} << 24) - 1;
  for (int64_t depth : {1, 4}) {
    const TensorShape shape({0, side, side, depth});
    auto s = RunSummary(b, "img", {{"images", Tensor::FromVector<uint8_t>(std::vector<uint8_t>(), shape)}});
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->value_size(), 0);
  }
}

TEST(MergeSummaryTest, ConcatenatesAndRejectsDuplicates) {
  GraphDefBuilder b;
  std::string tags = b.Const("tags", Strings({"a", "b"}, TensorShape({2})));
  std::string values = b.Const("values", Tensor::FromVector<float>({1, 2}));
  std::string scalars = b.Node("scalars", "ScalarSummary", {tags, values}, {{"T", MakeAttr(DT_FLOAT)}});
  std::string tag = b.Const("tag", Strings({"h"}, TensorShape({})));
  std::string histo = b.Node("histo", "HistogramSummary", {tag, values}, {{"T", MakeAttr(DT_FLOAT)}});
  b.Node("merged", "MergeSummary", {scalars, histo}, {{"N", MakeAttr(2)}});
  b.Node("dup", "MergeSummary", {scalars, scalars}, {{"N", MakeAttr(2)}});
  std::string garbage = b.Const("garbage", Strings({"\xff\xff"}, TensorShape({})));
  b.Node("bad", "MergeSummary", {scalars, garbage}, {{"N", MakeAttr(2)}});

  auto s = RunSummary(b, "merged");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->value_size(), 3);
  EXPECT_EQ(s->value(0).tag(), "a");
  EXPECT_EQ(s->value(1).tag(), "b");
  EXPECT_EQ(s->value(2).tag(), "h");
  EXPECT_TRUE(s->value(2).has_histo());

  auto dup = RunSummary(b, "dup");
  EXPECT_TRUE(absl::IsInvalidArgument(dup.status()));
  EXPECT_TRUE(absl::StrContains(dup.status().message(), "Duplicate tag a")) << dup.status();
  EXPECT_TRUE(absl::IsInvalidArgument(RunSummary(b, "bad").status()));
}

TEST(SummaryToEventFileTest, EverySummaryTypeRoundTrips) {
  GraphDefBuilder b;
  std::string tags = b.Const("tags", Strings({"loss"}, TensorShape({})));
  std::string loss = b.Placeholder("loss", DT_FLOAT);
  std::string scalar = b.Node("scalar", "ScalarSummary", {tags, loss}, {{"T", MakeAttr(DT_FLOAT)}});
  std::string htag = b.Const("htag", Strings({"weights"}, TensorShape({})));
  std::string weights = b.Const("weights", Tensor::FromVector<float>({-0.5f, 0.1f, 0.1f, 2.0f}));
  std::string histo = b.Node("histo", "HistogramSummary", {htag, weights}, {{"T", MakeAttr(DT_FLOAT)}});
  std::string itag = b.Const("itag", Strings({"input"}, TensorShape({})));
  std::string image = b.Const("image", Tensor::FromVector<uint8_t>({0, 64, 128, 255}, TensorShape({1, 2, 2, 1})));
  std::string img = b.Node("img", "ImageSummary", {itag, image}, {{"T", MakeAttr(DT_UINT8)}});
  b.Node("merged", "MergeSummary", {scalar, histo, img}, {{"N", MakeAttr(3)}});

  auto session = NewSession();
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(b.graph()).ok());
  EventWriterOptions o;
  o.run_dir = ::testing::TempDir() + "/summary_roundtrip";
  auto writer = EventWriter::Create(o);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->WriteGraph(b.graph()).ok());
  std::vector<std::string> expected;
  for (int step = 1; step <= 3; ++step) {
    std::vector<Tensor> out;
    ASSERT_TRUE((*session)->Run({{"loss", Tensor::Scalar<float>(1.0f / step)}}, {"merged"}, {}, &out).ok());
    expected.push_back(out[0].scalar<tstring>());
    ASSERT_TRUE((*writer)->WriteSerializedSummary(step * 100, out[0].scalar<tstring>()).ok());
  }
  ASSERT_TRUE((*writer)->WriteSessionStart(200).ok());
  ASSERT_TRUE((*writer)->Close().ok());

  testing_events::DecodedFile f = testing_events::DecodeFile((*writer)->path());
  ASSERT_EQ(f.error, "");
  ASSERT_EQ(f.events.size(), 6u);  // version, graph, 3 summaries, session start
  GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(f.events[1].graph_def()));
  EXPECT_EQ(graph.node_size(), b.graph().node_size());
  for (int i = 0; i < 3; ++i) {
    const Event& e = f.events[2 + i];
    EXPECT_EQ(e.step(), (i + 1) * 100);
    // Byte-identical to what the op produced.
    EXPECT_EQ(e.summary().SerializeAsString(), expected[i]);
    ASSERT_EQ(e.summary().value_size(), 3);
    EXPECT_EQ(e.summary().value(0).simple_value(), 1.0f / (i + 1));
    const HistogramProto& h = e.summary().value(1).histo();
    EXPECT_EQ(h.num(), 4);
    const std::vector<double> limits = ExpectedDefaultLimits();
    for (double limit : h.bucket_limit()) {
      EXPECT_TRUE(std::find(limits.begin(), limits.end(), limit) != limits.end()) << limit;
    }
    EXPECT_EQ(e.summary().value(2).tag(), "input/image/0");
    int w, hh;
    std::vector<uint8_t> px;
    ASSERT_TRUE(DecodePng(e.summary().value(2).image().encoded_image_string(), 1, &w, &hh, &px));
    EXPECT_EQ(px, (std::vector<uint8_t>{0, 64, 128, 255}));
  }
  EXPECT_EQ(f.events[5].session_log().status(), SessionLog::START);
  EXPECT_EQ(f.events[5].step(), 200);
}

}  // namespace
}  // namespace sluice
