// Experiment parsing (with locations and did-you-mean), overrides, defaults
// and graph-free validation.
#include "configs/load.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/framework/op_def.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"

namespace sluice {
namespace config {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;

// Protobuf's text parser recurses once per nested message, with no limit of
// its own (INT_MAX): `attr { value { func { attr { ...` a few hundred
// thousand deep overflowed the stack. Experiments nest about 10 deep.
constexpr int kMaxNesting = 64;

// Protobuf's messages quote the user's tokens whole; a token is shown up to
// this many characters (and looked up as a name only when no longer).
constexpr size_t kMaxShownToken = 80;

std::string Shown(absl::string_view token) {
  if (token.size() <= kMaxShownToken) return std::string(token);
  return absl::StrCat(token.substr(0, kMaxShownToken - 20), "...(", token.size(), " characters)");
}

bool IsWordChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// Finds `prefix`, then a name (word characters, and '.' when `dotted`) and a
// closing '"', starting at `from`. Returns the name's span, or npos. Plain
// scanning, linear in the message: std::regex recursed once per character
// matched and overflowed the stack on a long token.
size_t FindQuoted(absl::string_view message, absl::string_view prefix, bool dotted, size_t from,
                  absl::string_view* name) {
  for (size_t at = message.find(prefix, from); at != absl::string_view::npos; at = message.find(prefix, at + 1)) {
    const size_t start = at + prefix.size();
    size_t end = start;
    while (end < message.size() && (IsWordChar(message[end]) || (dotted && message[end] == '.'))) ++end;
    if (end > start && end < message.size() && message[end] == '"') {
      *name = message.substr(start, end - start);
      return at;
    }
  }
  return absl::string_view::npos;
}

// Suggests a field or enum value for protobuf's "no field named" / "Unknown
// enumeration value" errors; bounds the tokens any message shows.
std::string WithSuggestion(const std::string& message) {
  constexpr absl::string_view kType = "Message type \"", kNoField = "\" has no field named \"";
  constexpr absl::string_view kEnum = "Unknown enumeration value of \"", kForField = "\" for field \"";
  absl::string_view type_name, field;
  size_t at = FindQuoted(message, kType, true, 0, &type_name);
  if (at != absl::string_view::npos &&
      FindQuoted(message, kNoField, false, at, &field) == at + kType.size() + type_name.size()) {
    const Descriptor* d = google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(std::string(type_name));
    if (d != nullptr) {
      std::vector<std::string> names;
      for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
      std::string guess = field.size() <= kMaxShownToken ? ClosestMatch(field, names) : "";
      std::string out = absl::StrCat("unknown field '", Shown(field), "' in ", d->name());
      if (!guess.empty()) absl::StrAppend(&out, " (did you mean '", guess, "'?)");
      else absl::StrAppend(&out, "; valid fields: ", absl::StrJoin(names, ", "));
      return out;
    }
  }
  absl::string_view value;
  at = FindQuoted(message, kEnum, false, 0, &value);
  if (at != absl::string_view::npos &&
      FindQuoted(message, kForField, false, at, &field) == at + kEnum.size() + value.size()) {
    // The message does not say which enum the field has: take the values of
    // every enum field of that name in the file's messages, nested ones too
    // (Input.Text.Format), or of every enum when none is found.
    std::vector<std::string> values;
    std::vector<const Descriptor*> pending = {Experiment::descriptor()};
    std::set<const Descriptor*> seen;
    std::set<const google::protobuf::EnumDescriptor*> enums;
    while (!pending.empty()) {
      const Descriptor* d = pending.back();
      pending.pop_back();
      if (!seen.insert(d).second) continue;
      for (int i = 0; i < d->field_count(); ++i) {
        const FieldDescriptor* f = d->field(i);
        if (f->message_type() != nullptr) pending.push_back(f->message_type());
        if (f->enum_type() != nullptr && f->name() == field) enums.insert(f->enum_type());
      }
    }
    for (const auto* e : enums) {
      for (int v = 0; v < e->value_count(); ++v) values.push_back(e->value(v)->name());
    }
    std::string guess = value.size() <= kMaxShownToken ? ClosestMatch(value, values) : "";
    std::string out = absl::StrCat("unknown value '", Shown(value), "' for field '", field, "'");
    if (!guess.empty()) absl::StrAppend(&out, " (did you mean '", guess, "'?)");
    else if (!values.empty()) absl::StrAppend(&out, "; valid values: ", absl::StrJoin(values, ", "));
    return out;
  }
  // Any other message: bounded as a whole (it may quote a token too).
  constexpr size_t kMaxMessage = 2 * kMaxShownToken + 100;
  if (message.size() <= kMaxMessage) return message;
  return absl::StrCat(message.substr(0, kMaxMessage), "...(", message.size(), " characters)");
}

// The parser reports unknown names at the token after them; point at the
// name itself when it appears earlier on the same line.
int ColumnOfName(const std::string& text, int line, int column, const std::string& message) {
  // The first of these in the message names the token.
  absl::string_view name;
  size_t first = absl::string_view::npos;
  for (absl::string_view prefix : {"named \"", "value of \"", "Non-repeated field \""}) {
    absl::string_view n;
    const size_t at = FindQuoted(message, prefix, false, 0, &n);
    if (at < first) {
      first = at;
      name = n;
    }
  }
  constexpr absl::string_view kField = "Field \"";
  absl::string_view n;
  if (FindQuoted(message, kField, false, 0, &n) == 0 &&
      absl::StartsWith(absl::string_view(message).substr(kField.size() + n.size()), "\" is specified along")) {
    name = n;
  }
  if (name.empty()) return column;
  size_t start = 0;
  for (int i = 0; i < line && start != std::string::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return column;
  size_t end = text.find('\n', start);
  absl::string_view row = absl::string_view(text).substr(start, end == std::string::npos ? std::string::npos : end - start);
  size_t at = row.rfind(name, static_cast<size_t>(std::max(column, 0)));
  return at == absl::string_view::npos ? column : static_cast<int>(at);
}

// The paths (from Experiment, shortest first, at most `limit`) of the
// message fields whose type has a field named `field`: where an unknown
// field would have been known.
std::vector<std::string> PathsOfMessagesWithField(absl::string_view field, size_t limit) {
  std::vector<std::string> paths;
  std::vector<std::pair<const Descriptor*, std::string>> level = {{Experiment::descriptor(), ""}};
  std::set<const Descriptor*> seen = {Experiment::descriptor()};
  while (!level.empty() && paths.size() < limit) {
    std::vector<std::pair<const Descriptor*, std::string>> next;
    for (const auto& [d, path] : level) {
      for (int i = 0; i < d->field_count(); ++i) {
        const FieldDescriptor* f = d->field(i);
        const Descriptor* t = f->message_type();
        if (t == nullptr || !seen.insert(t).second) continue;
        const std::string child = path.empty() ? f->name() : absl::StrCat(path, ".", f->name());
        if (t->FindFieldByName(std::string(field)) != nullptr && paths.size() < limit) paths.push_back(child);
        next.push_back({t, child});
      }
    }
    level = std::move(next);
  }
  return paths;
}

// The last line before `line` (0-based) that is not blank or a comment.
absl::string_view PreviousCodeLine(const std::string& text, int line) {
  std::vector<absl::string_view> rows = absl::StrSplit(text, '\n');
  for (int i = std::min<int>(line, static_cast<int>(rows.size())) - 1; i >= 0; --i) {
    absl::string_view row = absl::StripAsciiWhitespace(rows[i]);
    if (!row.empty() && row[0] != '#') return row;
  }
  return "";
}

// For "unknown field 'F' in M" with no near name: when a `}` just closed a
// message and F belongs to a message elsewhere, a `}` above may have closed
// that message too early (protobuf's parser can only notice at F).
std::string ClosedEarlyHint(const std::string& message, const std::string& text, int line) {
  constexpr absl::string_view kUnknown = "unknown field '";
  if (!absl::StartsWith(message, kUnknown) || absl::StrContains(message, "did you mean")) return "";
  const size_t end = message.find('\'', kUnknown.size());
  if (end == std::string::npos) return "";
  const std::string field = message.substr(kUnknown.size(), end - kUnknown.size());
  if (!absl::EndsWith(PreviousCodeLine(text, line), "}")) return "";
  std::vector<std::string> paths = PathsOfMessagesWithField(field, 3);
  if (paths.empty()) return "";
  return absl::StrCat(" ('", field, "' is a field of ", absl::StrJoin(paths, ", "),
                      ": is a `}` above this line one too many, closing a message early?)");
}

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  CollectErrors(ConfigErrors* errors, const std::string* text) : errors_(errors), text_(text) {}
  void AddError(int line, int column, const std::string& message) override {
    // The parser stops at its first error; anything after a tokenizer error
    // (a control character, an unterminated string) follows from it.
    if (!errors_->empty()) return;
    column = ColumnOfName(*text_, line, column, message);
    std::string shown = WithSuggestion(message);
    const std::string hint = ClosedEarlyHint(shown, *text_, line);
    if (!hint.empty()) {  // before the list of valid fields, which it makes moot
      const size_t list = shown.find("; valid fields:");
      shown.insert(list == std::string::npos ? shown.size() : list, hint);
    }
    errors_->Add(Location{line + 1, column + 1}, shown);
  }
  void AddWarning(int line, int column, const std::string& message) override {}

 private:
  ConfigErrors* errors_;
  const std::string* text_;
};

// Maps every message in the experiment to its parse-info subtree.
void IndexTrees(const Message& message, const TextFormat::ParseInfoTree* tree,
                std::map<const Message*, const TextFormat::ParseInfoTree*>* out) {
  if (tree == nullptr) return;
  (*out)[&message] = tree;
  const Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < r->FieldSize(message, f); ++i) {
        IndexTrees(r->GetRepeatedMessage(message, f, i), tree->GetTreeForNested(f, i), out);
      }
    } else {
      IndexTrees(r->GetMessage(message, f), tree->GetTreeForNested(f, -1), out);
    }
  }
}

}  // namespace

Location LoadedExperiment::Where(const Message& message, const std::string& field, int index) const {
  Location where;
  // The last override of this field (or of its whole message) wins, as it did.
  for (const AppliedOverride& o : overrides) {
    if (o.message == &message && (o.field.empty() || (o.field == field && (o.index < 0 || o.index == std::max(index, 0))))) {
      where.set_by = o.text;
    }
  }
  if (locations == nullptr) return where;
  std::map<const Message*, const TextFormat::ParseInfoTree*> trees;
  IndexTrees(experiment, locations.get(), &trees);
  auto it = trees.find(&message);
  if (it == trees.end()) return where;  // a message the file does not write
  const FieldDescriptor* f = message.GetDescriptor()->FindFieldByName(field);
  if (f == nullptr) return where;
  auto loc = it->second->GetLocation(f, f->is_repeated() ? std::max(index, 0) : -1);
  if (loc.line < 0) return where;  // the field was not written in the file
  where.line = loc.line + 1;
  where.column = loc.column + 1;
  return where;
}

absl::StatusOr<std::unique_ptr<LoadedExperiment>> ParseExperiment(const std::string& path, const std::string& text) {
  auto loaded = std::make_unique<LoadedExperiment>();
  loaded->path = path;
  loaded->text = text;
  loaded->locations = std::make_unique<TextFormat::ParseInfoTree>();
  ConfigErrors errors(path);
  CollectErrors collector(&errors, &loaded->text);
  TextFormat::Parser parser;
  parser.SetRecursionLimit(kMaxNesting);
  parser.RecordErrorsTo(&collector);
  parser.WriteLocationsTo(loaded->locations.get());
  parser.AllowPartialMessage(false);
  if (!parser.ParseFromString(text, &loaded->experiment)) {
    if (errors.empty()) errors.Add({}, "could not parse the experiment");
    return errors.ToStatus();
  }
  return loaded;
}

absl::StatusOr<std::unique_ptr<LoadedExperiment>> LoadExperimentFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": error: is a directory, not an experiment file"));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // The reason (no such file, permission denied) from the failed open.
    const int error = errno;
    const std::string why = error != 0 ? absl::StrCat(": ", std::strerror(error)) : "";
    const std::string message = absl::StrCat(path, ": error: cannot open the experiment file", why);
    return error == EACCES ? absl::PermissionDeniedError(message) : absl::NotFoundError(message);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": error: cannot read the experiment file"));
  return ParseExperiment(path, buffer.str());
}

absl::Status ApplyOverrides(const std::vector<std::string>& overrides, Experiment* experiment,
                            std::vector<AppliedOverride>* applied) {
  for (const std::string& o : overrides) {
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", o, ": ", why));
    };
    size_t eq = o.find('=');
    if (eq == std::string::npos) return bad("expected field.path=value");
    std::string path = o.substr(0, eq), value = o.substr(eq + 1);
    Message* msg = experiment;
    std::vector<std::string> parts = absl::StrSplit(path, '.');
    for (size_t p = 0; p < parts.size(); ++p) {
      std::string part = parts[p];
      int index = -1;
      size_t bracket = part.find('[');
      if (bracket != std::string::npos) {
        if (part.back() != ']' || !absl::SimpleAtoi(part.substr(bracket + 1, part.size() - bracket - 2), &index) ||
            index < 0) {
          return bad(absl::StrCat("bad index in '", part, "'"));
        }
        part = part.substr(0, bracket);
      }
      const Descriptor* d = msg->GetDescriptor();
      const FieldDescriptor* f = d->FindFieldByName(part);
      if (f == nullptr) {
        std::vector<std::string> names;
        for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
        std::string guess = ClosestMatch(part, names);
        return bad(absl::StrCat("no field '", part, "' in ", d->name(),
                                guess.empty() ? absl::StrCat("; valid fields: ", absl::StrJoin(names, ", "))
                                              : absl::StrCat(" (did you mean '", guess, "'?)")));
      }
      const Reflection* r = msg->GetReflection();
      if (f->is_repeated() && index < 0) {
        return bad(absl::StrCat("'", part, "' is repeated: give an index, e.g. ", part, "[0]",
                                f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
                                    ? ""
                                    : absl::StrCat(" (", part, "[", r->FieldSize(*msg, f), "] appends)")));
      }
      if (!f->is_repeated() && index >= 0) return bad(absl::StrCat("'", part, "' is not repeated"));
      const bool last = p + 1 == parts.size();
      // A repeated scalar may also grow by one: "summaries.histograms[N]=x"
      // with N its size appends x.
      const bool append = last && f->is_repeated() && f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE &&
                          index == r->FieldSize(*msg, f);
      if (f->is_repeated() && index >= r->FieldSize(*msg, f) && !append) {
        return bad(absl::StrCat("'", part, "' has ", r->FieldSize(*msg, f), " element(s); index ", index, " is out of range"));
      }
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        if (last) {
          // A whole message in text format: --set 'optimizer.adam={learning_rate: 0.01}'.
          Message* target = f->is_repeated() ? r->MutableRepeatedMessage(msg, f, index) : r->MutableMessage(msg, f);
          std::string body = value;
          if (body.size() >= 2 && body.front() == '{' && body.back() == '}') body = body.substr(1, body.size() - 2);
          target->Clear();
          // Collect the parser's complaint for the one-line error (by default
          // protobuf logs it to stderr as a second line).
          class FirstError : public google::protobuf::io::ErrorCollector {
           public:
            void AddError(int line, int column, const std::string& message) override {
              if (text.empty()) text = absl::StrCat("column ", column + 1, ": ", WithSuggestion(message));
            }
            std::string text;
          } first_error;
          TextFormat::Parser parser;
          parser.SetRecursionLimit(kMaxNesting);
          parser.RecordErrorsTo(&first_error);
          if (!parser.ParseFromString(body, target)) {
            return bad(absl::StrCat("not a valid ", target->GetDescriptor()->name(), " in text format",
                                    first_error.text.empty() ? "" : absl::StrCat(" (", first_error.text, ")")));
          }
          if (applied != nullptr) applied->push_back({target, "", -1, o});
          break;
        }
        msg = f->is_repeated() ? r->MutableRepeatedMessage(msg, f, index) : r->MutableMessage(msg, f);
        continue;
      }
      if (!last) return bad(absl::StrCat("'", part, "' is not a message"));
      // One element of a repeated scalar (index checked above), or the field.
      const bool rep = f->is_repeated();
#define SLUICE_SET_SCALAR(Type, v)                  \
  do {                                              \
    if (!rep) {                                     \
      r->Set##Type(msg, f, v);                      \
    } else if (append) {                            \
      r->Add##Type(msg, f, v);                      \
    } else {                                        \
      r->SetRepeated##Type(msg, f, index, v);       \
    }                                               \
  } while (0)
      bool ok = true;
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32: { int32_t v; ok = absl::SimpleAtoi(value, &v); if (ok) SLUICE_SET_SCALAR(Int32, v); break; }
        case FieldDescriptor::CPPTYPE_INT64: { int64_t v; ok = absl::SimpleAtoi(value, &v); if (ok) SLUICE_SET_SCALAR(Int64, v); break; }
        case FieldDescriptor::CPPTYPE_UINT32: { uint32_t v; ok = absl::SimpleAtoi(value, &v); if (ok) SLUICE_SET_SCALAR(UInt32, v); break; }
        case FieldDescriptor::CPPTYPE_UINT64: { uint64_t v; ok = absl::SimpleAtoi(value, &v); if (ok) SLUICE_SET_SCALAR(UInt64, v); break; }
        case FieldDescriptor::CPPTYPE_FLOAT: { float v; ok = absl::SimpleAtof(value, &v); if (ok) SLUICE_SET_SCALAR(Float, v); break; }
        case FieldDescriptor::CPPTYPE_DOUBLE: { double v; ok = absl::SimpleAtod(value, &v); if (ok) SLUICE_SET_SCALAR(Double, v); break; }
        case FieldDescriptor::CPPTYPE_BOOL: { bool v; ok = absl::SimpleAtob(value, &v); if (ok) SLUICE_SET_SCALAR(Bool, v); break; }
        case FieldDescriptor::CPPTYPE_STRING: SLUICE_SET_SCALAR(String, value); break;
        case FieldDescriptor::CPPTYPE_ENUM: {
          const auto* ev = f->enum_type()->FindValueByName(value);
          if (ev == nullptr) {
            std::vector<std::string> names;
            for (int i = 0; i < f->enum_type()->value_count(); ++i) names.push_back(f->enum_type()->value(i)->name());
            std::string guess = ClosestMatch(value, names);
            return bad(absl::StrCat("'", value, "' is not one of ", absl::StrJoin(names, ", "),
                                    guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)")));
          }
          SLUICE_SET_SCALAR(Enum, ev);
          break;
        }
        default: ok = false;
      }
#undef SLUICE_SET_SCALAR
      if (!ok) return bad(absl::StrCat("'", value, "' is not a valid ", f->cpp_type_name()));
      if (applied != nullptr) applied->push_back({msg, f->name(), rep ? index : -1, o});
    }
  }
  return absl::OkStatus();
}

void ApplyDefaults(Experiment* e) {
  if (e->run_dir().empty()) e->set_run_dir(absl::StrCat("runs/", e->name().empty() ? "experiment" : e->name()));
  std::vector<Input::Pipeline*> pipelines;
  if (e->input().has_train()) pipelines.push_back(e->mutable_input()->mutable_train());
  if (e->input().has_eval()) pipelines.push_back(e->mutable_input()->mutable_eval());
  for (Input::Pipeline* p : pipelines) {
    if (p->batch_size() == 0) p->set_batch_size(128);
    if (p->reader_threads() == 0) p->set_reader_threads(1);
    if (p->has_shuffle()) {
      if (p->shuffle().capacity() == 0) p->mutable_shuffle()->set_capacity(10000);
      // A negative capacity is left for validation to report alone.
      if (!p->shuffle().has_min_after_dequeue() && p->shuffle().capacity() > 0) {
        p->mutable_shuffle()->set_min_after_dequeue(std::min<int64_t>(5000, p->shuffle().capacity() / 2));
      }
    }
    if (p->has_text()) {
      Input::Text* t = p->mutable_text();
      if (t->split() == Input::Text::SPLIT_DEFAULT) {
        t->set_split(p == e->mutable_input()->mutable_train() ? Input::Text::TRAIN : Input::Text::TEST);
      }
      if (t->seq_len() == 0) t->set_seq_len(35);
      if (t->vocabulary().min_count() == 0 && t->vocabulary().file().empty()) t->mutable_vocabulary()->set_min_count(1);
    }
  }
  Optimizer* o = e->mutable_optimizer();
  // Optimizer settings whose 0 means something (momentum 0, beta1 0) or must
  // be refused (learning rate 0) are `optional` fields: a default fills only
  // a field left out, never a 0 the user wrote.
  if (o->has_momentum() && !o->momentum().has_momentum()) o->mutable_momentum()->set_momentum(0.9f);
  if (o->has_adagrad() && !o->adagrad().has_initial_accumulator()) o->mutable_adagrad()->set_initial_accumulator(0.1f);
  if (o->has_rmsprop()) {
    if (!o->rmsprop().has_decay()) o->mutable_rmsprop()->set_decay(0.9f);
    if (!o->rmsprop().has_epsilon()) o->mutable_rmsprop()->set_epsilon(1e-10f);
  }
  if (o->has_adam()) {
    Optimizer::Adam* a = o->mutable_adam();
    if (!a->has_learning_rate()) a->set_learning_rate(0.001f);
    if (!a->has_beta1()) a->set_beta1(0.9f);
    if (!a->has_beta2()) a->set_beta2(0.999f);
    if (!a->has_epsilon()) a->set_epsilon(1e-8f);
  }
  if (e->train().seed() == 0) e->mutable_train()->set_seed(1);
  if (e->train().log_every_steps() == 0) e->mutable_train()->set_log_every_steps(100);
  if (e->checkpoint().keep() == 0) e->mutable_checkpoint()->set_keep(5);
  if (!e->has_summaries()) e->mutable_summaries()->set_every_steps(100);
  for (Layer& l : *e->mutable_model()->mutable_layer()) {
    if (l.has_conv2d() && l.conv2d().stride() == 0) l.mutable_conv2d()->set_stride(1);
    for (Layer::Pool* p : {l.has_max_pool() ? l.mutable_max_pool() : nullptr, l.has_avg_pool() ? l.mutable_avg_pool() : nullptr}) {
      if (p == nullptr) continue;
      if (p->size() == 0) p->set_size(2);
      if (p->stride() == 0) p->set_stride(p->size());
    }
    if (l.has_batch_norm()) {
      Layer::BatchNorm* bn = l.mutable_batch_norm();
      if (!bn->has_momentum()) bn->set_momentum(0.99f);
      if (!bn->has_epsilon()) bn->set_epsilon(0.001f);
    }
  }
  for (Loss& loss : *e->mutable_model()->mutable_loss()) {
    if (!loss.has_weight()) loss.set_weight(1);
  }
}

}  // namespace config
}  // namespace sluice
