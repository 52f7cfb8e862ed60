// Input pipeline assembly for IDX and text sources.
#include "models/input_pipeline.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/platform/env.h"
#include "inputs/file_order.h"
#include "inputs/idx.h"
#include "inputs/idx_cache.h"
#include "inputs/input_builders.h"
#include "inputs/text.h"
#include "monitoring/progress.h"

namespace sluice {
namespace models {
namespace {

// A FIFO batch queue's capacity: four batches, at least 1,000 examples, at
// most INT32_MAX (a batch_size past 536M overflowed 4 * batch into a negative
// int32); never under one batch, which validation keeps <= INT32_MAX.
int32_t DefaultQueueCapacity(int64_t batch_size) {
  return static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(4 * batch_size, 1000), INT32_MAX));
}

// The batch queue's kind and size: a RandomShuffleQueue of the configured
// shuffle buffer when `shuffle`, else a FIFO queue of DefaultQueueCapacity.
void SizeBatchQueue(const config::Input::Pipeline& p, const PipelineOptions& options, bool shuffle,
                    BatchOptions* batch) {
  batch->stage = options.stage_batches;
  batch->shuffle = shuffle;
  if (shuffle) {
    batch->capacity = static_cast<int32_t>(p.shuffle().capacity());
    batch->min_after_dequeue = static_cast<int32_t>(p.shuffle().min_after_dequeue());
    batch->seed = options.seed;
  } else {
    batch->capacity = DefaultQueueCapacity(p.batch_size());
  }
}

// The plan's words for the batch queue; a reader's seeded permutation, when
// it shuffles instead, comes before a FIFO queue.
std::string BatchQueueDescription(const BatchOptions& batch, bool reader_shuffle) {
  if (reader_shuffle) return "seeded permutation per epoch -> FIFO queue";
  return batch.shuffle ? absl::StrCat("shuffle queue (capacity ", batch.capacity, ", min_after_dequeue ",
                                      batch.min_after_dequeue, ")")
                       : absl::StrCat("FIFO queue (capacity ", batch.capacity, ")");
}

// The restore nodes of the reader built under `scope` (a string Placeholder
// for its serialized state and the ReaderRestoreState that applies it).
RestorableReader AddRestorableReader(InputGraph* in, const std::string& scope, const std::string& reader_type,
                                     const std::string& file) {
  RestorableReader r;
  r.reader_type = reader_type;
  r.file = file;
  r.state_feed = in->AddNode(scope + "/restore_state", "Placeholder", {},
                             {{"dtype", MakeAttr(DT_STRING)}, {"shape", MakeAttr(TensorShape({}))}});
  r.restore_op = in->AddNode(scope + "/restore", "ReaderRestoreState", {scope + "/reader", r.state_feed});
  return r;
}

Tensor Int32Vector(const std::vector<int64_t>& dims) {
  std::vector<int32_t> d(dims.begin(), dims.end());
  return Tensor::FromVector<int32_t>(d);
}

absl::Status BuildIdx(const config::Input::Pipeline& p, const PipelineOptions& options, InputGraph* in,
                      InputPipeline* out) {
  // The headers give the item shape and count; both files must agree. Read
  // (and checked) whole here, through the cache the pipeline's readers use.
  auto images_read = IdxFileCache::Default()->Read(Env::Default(), p.idx().images());
  if (!images_read.ok()) return images_read.status();
  auto labels_read = IdxFileCache::Default()->Read(Env::Default(), p.idx().labels());
  if (!labels_read.ok()) return labels_read.status();
  const IdxFile* images = images_read->get();
  const IdxFile* labels = labels_read->get();
  if (images->num_items() != labels->num_items()) {
    return absl::InvalidArgumentError(absl::StrCat("'", p.idx().images(), "' holds ", images->num_items(), " images but '",
                                                   p.idx().labels(), "' holds ", labels->num_items(), " labels"));
  }
  if (images->dtype != DT_UINT8 || labels->dtype != DT_UINT8 || labels->dims.size() != 1 ||
      (images->dims.size() != 3 && images->dims.size() != 4)) {
    return absl::InvalidArgumentError(absl::StrCat("'", p.idx().images(), "' and '", p.idx().labels(),
                                                   "' must be uint8 images [N,H,W] or [N,H,W,C] and uint8 labels [N]"));
  }
  std::vector<int64_t> item(images->dims.begin() + 1, images->dims.end());
  if (item.size() == 2) item.push_back(1);
  // This shard's share of each epoch.
  const int64_t shards = std::max(1, options.num_shards);
  out->examples_per_epoch = images->num_items() / shards + (options.shard_index < images->num_items() % shards ? 1 : 0);
  const std::string& s = options.scope;
  const int64_t epochs = p.epochs();
  ProducerOptions producer;
  producer.num_epochs = epochs;
  producer.shuffle = false;  // one file each; images and labels stay paired
  producer.scope = s + "/image_files";
  auto image_files = AddStringInputProducer(in, {p.idx().images()}, producer);
  if (!image_files.ok()) return image_files.status();
  producer.scope = s + "/label_files";
  auto label_files = AddStringInputProducer(in, {p.idx().labels()}, producer);
  if (!label_files.ok()) return label_files.status();
  // Deterministic shuffling: the same permutation in both readers keeps each
  // image with its label.
  const bool reader_shuffle = options.training && options.deterministic && p.has_shuffle();
  std::map<std::string, AttrValue> reader_attrs;
  if (reader_shuffle) reader_attrs["shuffle_seed"] = MakeAttr(options.seed != 0 ? options.seed : int64_t{1});
  if (options.num_shards > 1) {
    if (options.shard_index < 0 || options.shard_index >= options.num_shards) {
      return absl::InvalidArgumentError(absl::StrCat("input shard ", options.shard_index, " of ", options.num_shards));
    }
    reader_attrs["num_shards"] = MakeAttr(int64_t{options.num_shards});
    reader_attrs["shard_index"] = MakeAttr(int64_t{options.shard_index});
  }
  // Up to a batch of items per enqueue step (one session step per example
  // would cost more than the model). Both readers hold files of the same item
  // count and order, so each call returns as many images as labels.
  const int64_t per_read = std::max<int64_t>(p.batch_size(), 1);
  auto image_kv = AddReaderReadUpTo(in, "IdxRecordReader", *image_files, per_read, s + "/image_reader", reader_attrs);
  auto label_kv = AddReaderReadUpTo(in, "IdxRecordReader", *label_files, per_read, s + "/label_reader", reader_attrs);
  for (const auto& [scope, file] : {std::pair<std::string, std::string>{s + "/image_reader", p.idx().images()},
                                    {s + "/label_reader", p.idx().labels()}}) {
    out->readers.push_back(AddRestorableReader(in, scope, "IdxRecordReader", file));
  }
  out->exact_order = !options.training || reader_shuffle || !p.has_shuffle();
  std::string pixels = in->AddNode(s + "/decode_image", "DecodeRaw", {image_kv.second}, {{"out_type", MakeAttr(DT_UINT8)}});
  std::vector<int64_t> many = {-1};
  many.insert(many.end(), item.begin(), item.end());
  std::string shaped = in->AddNode(s + "/image_shape", "Reshape", {pixels, in->AddConst(s + "/image_dims", Int32Vector(many))},
                                   {{"T", MakeAttr(DT_UINT8)}, {"Tshape", MakeAttr(DT_INT32)}});
  std::string label_bytes = in->AddNode(s + "/decode_label", "DecodeRaw", {label_kv.second}, {{"out_type", MakeAttr(DT_UINT8)}});
  std::string label_scalar = in->AddNode(s + "/label_scalar", "Reshape",
                                         {label_bytes, in->AddConst(s + "/scalar_dims", Int32Vector({-1}))},
                                         {{"T", MakeAttr(DT_UINT8)}, {"Tshape", MakeAttr(DT_INT32)}});
  BatchOptions batch;
  batch.scope = s + "/batch";
  batch.batch_size = static_cast<int32_t>(p.batch_size());
  // One enqueue thread: the two readers advance in the same step, so each
  // image stays with its label.
  batch.num_threads = 1;
  batch.enqueue_many = true;
  SizeBatchQueue(p, options, options.training && p.has_shuffle() && !reader_shuffle, &batch);
  // The queue holds the file's bytes (uint8 pixels and labels); each batch is
  // converted after it leaves the queue. Stored as floats, fashion_mlp's
  // 20000-example shuffle buffer took 63 MB, more than the L3 cache, and
  // gathering a batch out of it cost 200-300 us of cache misses per step; as
  // bytes it is 16 MB, and the conversion touches only the batch.
  auto batched = AddBatch(in, {{shaped, DT_UINT8, TensorShape(item)}, {label_scalar, DT_UINT8, TensorShape()}}, batch);
  if (!batched.ok()) return batched.status();
  std::string image = in->AddNode(s + "/image_float", "ImageToFloat", {(*batched)[0]},
                                  {{"scale", MakeAttr(p.scale_to_unit() ? 1.0f / 255.0f : 1.0f)}});
  std::string label = in->AddNode(s + "/label_int64", "Cast", {(*batched)[1]},
                                  {{"SrcT", MakeAttr(DT_UINT8)}, {"DstT", MakeAttr(DT_INT64)}});
  std::vector<int64_t> image_dims = {kUnknownDim};
  image_dims.insert(image_dims.end(), item.begin(), item.end());
  out->features["image"] = {image, DT_FLOAT, PartialShape::FromDims(image_dims)};
  out->features["label"] = {label, DT_INT64, PartialShape::FromDims({kUnknownDim})};
  out->queue_capacity = batch.capacity;
  out->queue_bytes_per_example = TensorShape(item).num_elements() + 1;  // uint8 pixels and label
  out->queue_size = in->AddNode(batch.scope + "/size", "QueueSize", {batch.scope + "/queue"});
  out->description = absl::StrCat("IDX ", p.idx().images(), " (", images->num_items(), " x [", absl::StrJoin(item, ","),
                                  "]) -> ", BatchQueueDescription(batch, reader_shuffle), " -> batches of ",
                                  p.batch_size());
  return absl::OkStatus();
}

// The files a pipeline's patterns match, this shard's share of them (every
// num_shards-th file); a training pipeline keeps them all in out->all_files.
absl::StatusOr<std::vector<std::string>> ShardFiles(const google::protobuf::RepeatedPtrField<std::string>& patterns,
                                                    const PipelineOptions& options, const char* kind,
                                                    InputPipeline* out) {
  auto all_files = text::ExpandFiles(Env::Default(), {patterns.begin(), patterns.end()}, {});
  if (!all_files.ok()) return all_files.status();
  if (options.training) out->all_files = *all_files;
  std::vector<std::string> files;
  const int shards = std::max(1, options.num_shards);
  for (size_t i = 0; i < all_files->size(); ++i) {
    if (static_cast<int>(i % shards) == options.shard_index % shards) files.push_back((*all_files)[i]);
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("input shard ", options.shard_index, " of ", shards, " has no ",
                                                   kind, " file: the patterns match ", all_files->size(),
                                                   " file(s); a sharded run needs one per shard at least"));
  }
  return files;
}

// Deterministic shuffling of a TFRecord or CSV source: instead of a shuffle
// queue (whose order depends on timing), the reader reads each file's records
// in a seeded permutation, and the files come in a seeded order per epoch.
bool FileSourceReaderShuffle(const config::Input::Pipeline& p, const PipelineOptions& options) {
  return options.training && options.deterministic && p.has_shuffle();
}

// A TFRecord or CSV source's records: its files (shuffled every epoch when
// training with shuffle) -> a file queue -> `reader_op`, a batch of records
// per read. Returns the records' tensor (a string vector). Training
// pipelines also get the nodes that restore their position (file_source).
absl::StatusOr<std::string> AddFileRecords(const config::Input::Pipeline& p, const PipelineOptions& options,
                                           const std::vector<std::string>& files, const std::string& reader_op,
                                           const RecordFormat& format, std::map<std::string, AttrValue> reader_attrs,
                                           InputGraph* in, InputPipeline* out) {
  const std::string& s = options.scope;
  ProducerOptions producer;
  producer.num_epochs = p.epochs();
  producer.shuffle = options.training && p.has_shuffle();
  producer.seed = options.seed != 0 ? options.seed : 1;
  producer.scope = s + "/files";
  auto file_queue = AddStringInputProducer(in, files, producer);
  if (!file_queue.ok()) return file_queue.status();
  const bool reader_shuffle = FileSourceReaderShuffle(p, options);
  if (reader_shuffle) reader_attrs["shuffle_seed"] = MakeAttr(producer.seed);
  // Any 2n files in a row hold a whole epoch's n: that many without a record
  // means every file is empty, which would otherwise loop for ever.
  reader_attrs["empty_work_limit"] = MakeAttr(static_cast<int64_t>(2 * files.size()));
  const std::string records = AddReaderReadUpTo(in, reader_op, *file_queue, std::max<int64_t>(p.batch_size(), 1),
                                                s + "/reader", reader_attrs)
                                  .second;
  if (options.training) {
    RestorableFileSource source;
    source.files = files;
    source.format = format;
    source.shuffle = producer.shuffle;
    source.reader_shuffle = reader_shuffle;
    source.seed = producer.seed;
    source.num_epochs = producer.num_epochs;
    source.reader = AddRestorableReader(in, s + "/reader", reader_op, "");
    const std::string epochs = producer.scope + "/epochs";
    source.epochs_feed = in->AddNode(epochs + "/restore_value", "Placeholder", {},
                                     {{"dtype", MakeAttr(DT_INT64)}, {"shape", MakeAttr(TensorShape({}))}});
    source.set_epochs_op =
        in->AddNode(epochs + "/restore", "Assign", {epochs, source.epochs_feed}, {{"T", MakeAttr(DT_INT64)}});
    out->file_source = std::move(source);
  }
  return records;
}

// Whether a TFRecord or CSV source's batches hold its records in the order
// the files give them: no shuffle queue, and one thread moving them (two
// threads may enqueue their batches of records in either order).
bool FileSourceInOrder(const config::Input::Pipeline& p, const PipelineOptions& options) {
  return !options.training || options.deterministic || (!p.has_shuffle() && p.reader_threads() <= 1);
}

// A CSV source's records: lines, after a header line when skip_header.
RecordFormat LinesFormat(const config::Input::Csv& c) {
  RecordFormat format;
  format.kind = RecordFormat::kLines;
  format.skip_header_lines = c.skip_header() ? 1 : 0;
  return format;
}

// A TFRecord or CSV source's batch queue: reader_threads enqueue threads
// share the reader and parse in parallel, a batch of records at a time. In
// deterministic mode one thread (two may enqueue their batches in either
// order), and a FIFO queue (FileSourceReaderShuffle).
BatchOptions FileSourceBatch(const config::Input::Pipeline& p, const PipelineOptions& options) {
  BatchOptions batch;
  batch.scope = options.scope + "/batch";
  batch.batch_size = static_cast<int32_t>(p.batch_size());
  batch.num_threads = options.deterministic ? 1 : std::max(1, p.reader_threads());
  batch.enqueue_many = true;
  SizeBatchQueue(p, options, options.training && p.has_shuffle() && !FileSourceReaderShuffle(p, options), &batch);
  return batch;
}

// TFRecord files of tf.Examples: file names (shuffled per epoch when
// training with shuffle) -> TFRecordReader, a batch of records per read ->
// ParseExample of the configured dense features -> (shuffle) queue ->
// batches. A "uint8_image" feature is a bytes feature of raw pixels, kept as
// uint8 in the queue and converted to float (scale_to_unit) after it, as IDX
// images are. Sharded runs read every num_shards-th file.
absl::Status BuildTfRecord(const config::Input::Pipeline& p, const PipelineOptions& options, InputGraph* in,
                           InputPipeline* out) {
  const config::Input::TfRecord& t = p.tfrecord();
  auto sharded = ShardFiles(t.files(), options, "TFRecord", out);
  if (!sharded.ok()) return sharded.status();
  const std::vector<std::string>& files = *sharded;
  // Parsed features, their dtype in the queue, and what becomes of them after.
  struct Parsed {
    config::Input::Feature config;
    FeatureSpec spec;       // as ParseExample reads it
    DataType queued = DT_FLOAT;
    std::vector<int64_t> shape;
    bool image = false;
  };
  std::vector<Parsed> parsed;
  for (const auto& f : t.feature()) {
    Parsed q;
    q.config = f;
    q.shape.assign(f.shape().begin(), f.shape().end());
    for (int64_t d : q.shape) {
      if (d < 1) {
        return absl::InvalidArgumentError(absl::StrCat("feature '", f.name(), "': shape dims must be >= 1, got ", d));
      }
    }
    auto shape = TensorShape::Build(q.shape);
    if (!shape.ok()) return absl::InvalidArgumentError(absl::StrCat("feature '", f.name(), "': ", shape.status().message()));
    q.spec.key = f.name();
    if (f.dtype() == "float") {
      q.spec.dtype = q.queued = DT_FLOAT;
      q.spec.shape = *shape;
    } else if (f.dtype() == "int64") {
      q.spec.dtype = q.queued = DT_INT64;
      q.spec.shape = *shape;
    } else if (f.dtype() == "string") {
      q.spec.dtype = q.queued = DT_STRING;
      q.spec.shape = *shape;
    } else if (f.dtype() == "uint8_image") {
      if (q.shape.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("feature '", f.name(), "': a uint8_image needs its shape, e.g. [28, 28, 1]"));
      }
      q.spec.dtype = DT_STRING;  // one bytes value per example
      q.spec.shape = TensorShape({});
      q.queued = DT_UINT8;
      q.image = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("feature '", f.name(), "': dtype '", f.dtype(),
                                                     "' is not one of float, int64, string, uint8_image"));
    }
    parsed.push_back(std::move(q));
  }
  // Evaluation runs over the data once and needs its size; training does not
  // (its epochs end when the file queue does), so its files are not read twice.
  if (!options.training) {
    auto count = CountRecords(Env::Default(), files, RecordFormat{RecordFormat::kTfRecord});
    if (!count.ok()) return count.status();
    out->examples_per_epoch = *count;
  }
  const std::string& s = options.scope;
  auto records = AddFileRecords(p, options, files, "TFRecordReader", RecordFormat{RecordFormat::kTfRecord}, {}, in, out);
  if (!records.ok()) return records.status();
  std::vector<FeatureSpec> specs;
  for (const Parsed& q : parsed) specs.push_back(q.spec);
  std::vector<std::string> values = AddParseExample(in, *records, specs, s + "/parse");
  std::vector<TensorSpec> queued;
  int64_t bytes_per_example = 0;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Parsed& q = parsed[i];
    std::string tensor = values[i];
    if (q.image) {
      const std::string name = s + "/" + q.config.name();
      std::string pixels = in->AddNode(name + "/decode", "DecodeRaw", {tensor}, {{"out_type", MakeAttr(DT_UINT8)}});
      std::vector<int64_t> many = {-1};
      many.insert(many.end(), q.shape.begin(), q.shape.end());
      tensor = in->AddNode(name + "/shape", "Reshape", {pixels, in->AddConst(name + "/dims", Int32Vector(many))},
                           {{"T", MakeAttr(DT_UINT8)}, {"Tshape", MakeAttr(DT_INT32)}});
    }
    const TensorShape element(q.shape);
    queued.push_back({tensor, q.queued, element});
    bytes_per_example += element.num_elements() * (q.queued == DT_STRING ? 64 : DataTypeSize(q.queued));
  }
  const BatchOptions batch = FileSourceBatch(p, options);
  auto batched = AddBatch(in, queued, batch);
  if (!batched.ok()) return batched.status();
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Parsed& q = parsed[i];
    std::vector<int64_t> dims = {kUnknownDim};
    dims.insert(dims.end(), q.shape.begin(), q.shape.end());
    std::string tensor = (*batched)[i];
    DataType dtype = q.queued;
    if (q.image) {
      tensor = in->AddNode(s + "/" + q.config.name() + "_float", "ImageToFloat", {tensor},
                           {{"scale", MakeAttr(p.scale_to_unit() ? 1.0f / 255.0f : 1.0f)}});
      dtype = DT_FLOAT;
    }
    out->features[q.config.name()] = {tensor, dtype, PartialShape::FromDims(dims)};
  }
  out->exact_order = FileSourceInOrder(p, options);
  out->queue_capacity = batch.capacity;
  out->queue_bytes_per_example = bytes_per_example;
  out->queue_size = in->AddNode(batch.scope + "/size", "QueueSize", {batch.scope + "/queue"});
  out->description = absl::StrCat(
      "TFRecord ", files.size(), " file(s) (", absl::StrJoin(t.files(), ", "), ")",
      out->examples_per_epoch > 0 ? absl::StrCat(", ", out->examples_per_epoch, " records") : "", " -> ",
      BatchQueueDescription(batch, FileSourceReaderShuffle(p, options)), " -> batches of ", p.batch_size());
  return absl::OkStatus();
}

// CSV text files: file names -> TextLineReader (skip_header: one line of each
// file), a batch of lines per read -> DecodeCSV -> the configured columns as
// features -> (shuffle) queue -> batches. A column feature of shape [k] takes
// k consecutive fields, packed into [batch, k]; one of shape [] one field,
// [batch]. Every field is required: an empty or missing one is an error
// naming the record.
absl::Status BuildCsv(const config::Input::Pipeline& p, const PipelineOptions& options, InputGraph* in,
                      InputPipeline* out) {
  const config::Input::Csv& c = p.csv();
  auto files = ShardFiles(c.files(), options, "CSV", out);
  if (!files.ok()) return files.status();
  if (c.column_size() == 0) return absl::InvalidArgumentError("a csv input lists its columns (column { name dtype shape })");
  struct Column {
    std::string name;
    DataType dtype = DT_FLOAT;
    int64_t width = 1;  // fields it takes
    bool vector = false;
  };
  std::vector<Column> columns;
  std::vector<DataType> field_types;
  for (const auto& f : c.column()) {
    Column col;
    col.name = f.name();
    if (f.dtype() == "float") {
      col.dtype = DT_FLOAT;
    } else if (f.dtype() == "int64") {
      col.dtype = DT_INT64;
    } else if (f.dtype() == "string") {
      col.dtype = DT_STRING;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("column '", f.name(), "': dtype '", f.dtype(), "' is not one of float, int64, string"));
    }
    if (f.shape_size() > 1 || (f.shape_size() == 1 && (f.shape(0) < 1 || f.shape(0) > 100000))) {
      return absl::InvalidArgumentError(absl::StrCat("column '", f.name(), "': shape must be [] or [k] with 1 <= k <= "
                                                     "100000 (k consecutive fields)"));
    }
    col.vector = f.shape_size() == 1;
    col.width = col.vector ? f.shape(0) : 1;
    if (col.vector && col.dtype == DT_STRING) {
      return absl::InvalidArgumentError(absl::StrCat("column '", f.name(), "': a string column takes one field"));
    }
    for (int64_t i = 0; i < col.width; ++i) field_types.push_back(col.dtype);
    columns.push_back(col);
  }
  if (!options.training) {
    auto count = CountRecords(Env::Default(), *files, LinesFormat(c));
    if (!count.ok()) return count.status();
    out->examples_per_epoch = *count;
  }
  const std::string& s = options.scope;
  std::map<std::string, AttrValue> reader_attrs;
  if (c.skip_header()) reader_attrs["skip_header_lines"] = MakeAttr(int64_t{1});
  auto records = AddFileRecords(p, options, *files, "TextLineReader", LinesFormat(c), reader_attrs, in, out);
  if (!records.ok()) return records.status();
  // Required fields: an empty default per field.
  std::vector<std::string> decode_inputs = {*records};
  for (size_t i = 0; i < field_types.size(); ++i) {
    decode_inputs.push_back(in->AddConst(absl::StrCat(s + "/default_", i), Tensor(field_types[i], TensorShape({0}))));
  }
  const std::string decoded = in->AddNode(s + "/decode", "DecodeCSV", decode_inputs, {{"OUT_TYPE", MakeAttr(field_types)}});
  std::vector<TensorSpec> queued;
  int64_t field = 0;
  int64_t bytes_per_example = 0;
  for (const Column& col : columns) {
    std::string tensor = absl::StrCat(decoded, ":", field);
    if (col.vector) {
      std::vector<std::string> parts;
      for (int64_t k = 0; k < col.width; ++k) parts.push_back(absl::StrCat(decoded, ":", field + k));
      tensor = in->AddNode(s + "/" + col.name + "_pack", "Pack", parts,
                           {{"T", MakeAttr(col.dtype)}, {"N", MakeAttr(col.width)}, {"axis", MakeAttr(int64_t{1})}});
    }
    field += col.width;
    const TensorShape element = col.vector ? TensorShape({col.width}) : TensorShape({});
    queued.push_back({tensor, col.dtype, element});
    bytes_per_example += col.width * (col.dtype == DT_STRING ? 64 : DataTypeSize(col.dtype));
  }
  const BatchOptions batch = FileSourceBatch(p, options);
  auto batched = AddBatch(in, queued, batch);
  if (!batched.ok()) return batched.status();
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& col = columns[i];
    out->features[col.name] = {(*batched)[i], col.dtype,
                               col.vector ? PartialShape::FromDims({kUnknownDim, col.width})
                                          : PartialShape::FromDims({kUnknownDim})};
  }
  out->exact_order = FileSourceInOrder(p, options);
  out->queue_capacity = batch.capacity;
  out->queue_bytes_per_example = bytes_per_example;
  out->queue_size = in->AddNode(batch.scope + "/size", "QueueSize", {batch.scope + "/queue"});
  out->description = absl::StrCat(
      "CSV ", files->size(), " file(s) (", absl::StrJoin(c.files(), ", "), "), ", field_types.size(), " fields",
      out->examples_per_epoch > 0 ? absl::StrCat(", ", out->examples_per_epoch, " records") : "", " -> ",
      BatchQueueDescription(batch, FileSourceReaderShuffle(p, options)), " -> batches of ", p.batch_size());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TextSource> ResolveTextSource(const config::Input::Text& t, bool training,
                                             const std::vector<std::string>& vocabulary) {
  using config::Input;
  Env* env = Env::Default();
  auto files = text::ExpandFiles(env, {t.files().begin(), t.files().end()}, {t.exclude().begin(), t.exclude().end()});
  if (!files.ok()) return files.status();
  TextSource source;
  source.corpus.files = *files;
  source.corpus.format = t.format() == Input::Text::FORTUNES ? text::Format::kFortunes : text::Format::kLines;
  source.corpus.lowercase = !t.keep_case();
  Input::Text::Split configured = t.split();
  if (configured == Input::Text::SPLIT_DEFAULT) configured = training ? Input::Text::TRAIN : Input::Text::TEST;
  source.split = configured == Input::Text::ALL    ? text::Split::kAll
                 : configured == Input::Text::TEST ? text::Split::kTest
                                                   : text::Split::kTrain;
  auto words =
      !vocabulary.empty() ? text::Vocabulary::FromWords(vocabulary, "the train input's vocabulary")
      : !t.vocabulary().file().empty()
          ? text::Vocabulary::ReadFile(env, t.vocabulary().file(), source.corpus.lowercase)
          : text::BuildVocabulary(env, source.corpus,
                                  source.split == text::Split::kAll ? text::Split::kAll : text::Split::kTrain,
                                  t.vocabulary().max_size(), std::max<int64_t>(1, t.vocabulary().min_count()));
  if (!words.ok()) return words.status();
  source.vocabulary = *std::move(words);
  return source;
}

namespace {

// A text corpus: the vocabulary (the train pipeline's, or built from the train
// split or all sentences, or read), the TextWindowReader over this pipeline's
// split -> rows of seq_len + 1 ids -> tokens = the first seq_len, targets =
// the last seq_len -> (shuffle) batch.
absl::Status BuildText(const config::Input::Pipeline& p, const PipelineOptions& options, InputGraph* in,
                       InputPipeline* out) {
  using config::Input;
  const Input::Text& t = p.text();
  if (t.seq_len() < 1 || t.seq_len() > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat("text seq_len ", t.seq_len(), " is not in [1, 2^24]"));
  }
  Env* env = Env::Default();
  auto source = ResolveTextSource(t, options.training, options.vocabulary);
  if (!source.ok()) return source.status();
  const text::Corpus& corpus = source->corpus;
  const text::Split split = source->split;
  const text::Vocabulary* vocabulary = &source->vocabulary;
  const std::string split_name = split == text::Split::kAll ? "all" : split == text::Split::kTest ? "test" : "train";
  const std::string what = split == text::Split::kAll ? "the text corpus" : "the " + split_name + " split of the text corpus";
  auto stream = text::ReadTokenStream(env, corpus, split, *vocabulary);
  if (!stream.ok()) return stream.status();
  const int64_t seq_len = t.seq_len();
  const int64_t windows = text::NumWindows(static_cast<int64_t>(stream->ids.size()), seq_len);
  if (windows == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " (", CountOf(static_cast<int64_t>(corpus.files.size()), "file", "files"),
                                                   ", first '", corpus.files[0],
                                                   "') holds ", stream->ids.size(),
                                                   " tokens: too few for one window of seq_len + 1 = ", seq_len + 1));
  }
  const int64_t shards = std::max(1, options.num_shards);
  if (shards > 1 && (options.shard_index < 0 || options.shard_index >= shards)) {
    return absl::InvalidArgumentError(absl::StrCat("input shard ", options.shard_index, " of ", shards));
  }
  out->examples_per_epoch = windows / shards + (options.shard_index < windows % shards ? 1 : 0);
  const std::string& s = options.scope;
  // One work unit per epoch: the reader reads the whole corpus for each.
  ProducerOptions producer;
  producer.num_epochs = p.epochs();
  producer.shuffle = false;
  producer.scope = s + "/corpus";
  auto work = AddStringInputProducer(in, {split_name}, producer);
  if (!work.ok()) return work.status();
  // A corpus read in file order runs topic by topic, and a bounded shuffle
  // queue mixes only neighbouring windows; the reader holds every window's
  // position, so with `shuffle` it reads each epoch in a seeded permutation
  // (a full shuffle, as PyTorch's shuffling sampler does), batched in order:
  // exact resume in every mode. The queue's capacity is not used.
  const bool reader_shuffle = options.training && p.has_shuffle();
  std::map<std::string, AttrValue> attrs = {
      {"files", MakeAttr(corpus.files)},
      {"format", MakeAttr(corpus.format == text::Format::kFortunes ? "fortunes" : "lines")},
      {"split", MakeAttr(split_name)},
      {"lowercase", MakeAttr(corpus.lowercase)},
      {"seq_len", MakeAttr(seq_len)},
      {"vocabulary", MakeAttr(vocabulary->words())}};
  if (reader_shuffle) attrs["shuffle_seed"] = MakeAttr(options.seed != 0 ? options.seed : int64_t{1});
  if (shards > 1) {
    attrs["num_shards"] = MakeAttr(shards);
    attrs["shard_index"] = MakeAttr(int64_t{options.shard_index});
  }
  const std::string reader = s + "/reader";
  auto kv = AddReaderReadUpTo(in, "TextWindowReader", *work, std::max<int64_t>(p.batch_size(), 1), reader, attrs);
  out->readers.push_back(AddRestorableReader(in, reader, "TextWindowReader", split_name));
  out->exact_order = !options.training || reader_shuffle || !p.has_shuffle();
  const std::string ids = in->AddNode(s + "/decode_ids", "DecodeRaw", {kv.second}, {{"out_type", MakeAttr(DT_INT64)}});
  const std::string rows = in->AddNode(s + "/windows", "Reshape",
                                       {ids, in->AddConst(s + "/window_dims", Int32Vector({-1, seq_len + 1}))},
                                       {{"T", MakeAttr(DT_INT64)}, {"Tshape", MakeAttr(DT_INT32)}});
  const std::string size = in->AddConst(s + "/slice_size", Int32Vector({-1, seq_len}));
  const std::map<std::string, AttrValue> slice = {{"T", MakeAttr(DT_INT64)}, {"Index", MakeAttr(DT_INT32)}};
  const std::string tokens =
      in->AddNode(s + "/tokens", "Slice", {rows, in->AddConst(s + "/tokens_begin", Int32Vector({0, 0})), size}, slice);
  const std::string targets =
      in->AddNode(s + "/targets", "Slice", {rows, in->AddConst(s + "/targets_begin", Int32Vector({0, 1})), size}, slice);
  BatchOptions batch;
  batch.scope = s + "/batch";
  batch.batch_size = static_cast<int32_t>(p.batch_size());
  batch.num_threads = 1;  // one reader: its windows in order (or its seeded permutation)
  batch.enqueue_many = true;
  SizeBatchQueue(p, options, options.training && p.has_shuffle() && !reader_shuffle, &batch);
  auto batched = AddBatch(in, {{tokens, DT_INT64, TensorShape({seq_len})}, {targets, DT_INT64, TensorShape({seq_len})}},
                          batch);
  if (!batched.ok()) return batched.status();
  const int64_t id_limit = static_cast<int64_t>(vocabulary->size());
  out->features["tokens"] = {(*batched)[0], DT_INT64, PartialShape::FromDims({kUnknownDim, seq_len}), id_limit};
  out->features["targets"] = {(*batched)[1], DT_INT64, PartialShape::FromDims({kUnknownDim, seq_len}), id_limit};
  out->queue_capacity = batch.capacity;
  out->queue_bytes_per_example = 2 * seq_len * static_cast<int64_t>(sizeof(int64_t));  // tokens and targets
  out->queue_size = in->AddNode(batch.scope + "/size", "QueueSize", {batch.scope + "/queue"});
  out->vocabulary = vocabulary->words();
  out->description = absl::StrCat(
      "text ", split == text::Split::kAll ? "(all sentences)" : absl::StrCat(split_name, " split"), " of ",
      CountOf(static_cast<int64_t>(corpus.files.size()), "file", "files"), " (", t.files(0),
      (t.files_size() > 1 ? ", ..." : ""), "): ", CountOf(stream->sentences, "sentence", "sentences"), ", ", stream->ids.size(), " ids with <eos> (", stream->unknown, " <unk>), vocabulary ",
      vocabulary->size(), " -> ", windows, " windows of ", seq_len, " -> ",
      BatchQueueDescription(batch, reader_shuffle), " -> batches of ", p.batch_size());
  return absl::OkStatus();
}

}  // namespace

absl::Status BuildInputPipeline(const config::Input::Pipeline& p, const PipelineOptions& options, GraphDef* graph,
                                InputPipeline* out) {
  InputGraph in(graph);
  absl::Status s;
  if (p.has_idx()) {
    s = BuildIdx(p, options, &in, out);
  } else if (p.has_text()) {
    s = BuildText(p, options, &in, out);
  } else if (p.has_tfrecord()) {
    s = BuildTfRecord(p, options, &in, out);
  } else if (p.has_csv()) {
    s = BuildCsv(p, options, &in, out);
  } else {
    s = absl::InvalidArgumentError("the input has no source (idx, tfrecord, csv or text)");
  }
  if (!s.ok()) return s;
  out->runners = in.runners;
  out->init_ops = in.init_ops;
  if (in.stage_ops.size() > 1) return absl::InternalError("the input pipeline staged more than one batch queue");
  out->stage_op = in.stage_ops.empty() ? "" : in.stage_ops[0];
  if (!out->stage_op.empty()) absl::StrAppend(&out->description, ", each staged a step ahead");
  out->num_shards = std::max(1, options.num_shards);
  return absl::OkStatus();
}

}  // namespace models
}  // namespace sluice
