// `dix bench fulltext`: a backlog of N product-like records (a title of 5 words, a description
// of 30, from a 240-word vocabulary with plural, -ing and -ed forms; 100 per transaction) written
// with no index registered; then the Xapian backend is registered (fields title → S weight 5,
// body → XB weight 1, English stemming) and timed until it is ready (its rebuild over the backlog
// done) and durable through the end of the log. Beside it, in the same run and process, the baseline: Xapian alone indexing the same
// documents (same TermGenerator calls, id terms, document data and stemmer) with
// replace_document inside flushed transactions committed at dix's cadence (as many documents per
// commit as the backend's barriers committed, on average). The ratio is dix's rate over the
// baseline's.
#include <sys/resource.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <xapian.h>

#include <dix/backends/xapian_backend.hpp>
#include <dix/primary_store.hpp>
#include <dix/runtime.hpp>

#include "bench.hpp"
#include "report.hpp"
#include "tool/args.hpp"

namespace dix::bench {
namespace {

constexpr std::uint32_t table = 1;
constexpr std::size_t per_txn = 100;
constexpr std::size_t title_words = 5;
constexpr std::size_t body_words = 30;

constexpr const char* stems[] = {
    "shoe",   "boot",   "hat",    "shirt",  "jacket", "coat",   "glove",  "sock",   "scarf",  "belt",   "bag",
    "wallet", "watch",  "ring",   "lamp",   "chair",  "table",  "desk",   "shelf",  "bed",    "pillow", "blanket",
    "towel",  "mug",    "plate",  "bowl",   "knife",  "fork",   "spoon",  "pan",    "kettle", "toaster", "phone",
    "cable",  "charger", "camera", "lens",  "tripod", "speaker", "screen", "mouse", "key",    "drill",  "hammer",
    "saw",    "ladder", "hose",   "rake",   "shovel", "bike",   "helmet", "tent",   "rope",   "light",  "walk",
    "run",    "climb",  "paint",  "clean",  "cook",
};
constexpr const char* suffixes[] = {"", "s", "ing", "ed"};
constexpr std::size_t vocabulary = std::size(stems) * std::size(suffixes);

// Record i's deterministic text: a small LCG seeded by i picks the words.
struct text_gen {
  std::uint64_t state;
  explicit text_gen(std::size_t i) : state(0x9E3779B97F4A7C15ull * (i + 1)) {}
  std::string words(std::size_t n) {
    std::string out;
    for (std::size_t k = 0; k < n; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const auto w = static_cast<std::size_t>((state >> 33) % vocabulary);
      if (k > 0) out.push_back(' ');
      out += stems[w / std::size(suffixes)];
      out += suffixes[w % std::size(suffixes)];
    }
    return out;
  }
};

// CPU seconds of this process so far, every thread (user + system).
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

std::string record_id(std::size_t i) {
  char key[32];
  std::snprintf(key, sizeof key, "p%015zu", i);
  return key;
}

// The payload: title, '\n', description.
std::string payload_of(std::size_t i) {
  text_gen g(i);
  auto title = g.words(title_words);
  return title + "\n" + g.words(body_words);
}

std::pair<std::string, std::string> split(std::string_view payload) {
  const auto nl = payload.find('\n');
  if (nl == std::string_view::npos) return {std::string(payload), {}};
  return {std::string(payload.substr(0, nl)), std::string(payload.substr(nl + 1))};
}

xapian_options index_options(const std::filesystem::path& path) {
  xapian_options o;
  o.path = path;
  o.fields = {{"title", {"S", 5}}, {"body", {"XB", 1}}};
  return o;
}

// Xapian alone: the same documents, committed every `per_commit` documents; records/s.
double baseline_ingest(const std::filesystem::path& dir, std::size_t records, std::size_t per_commit) {
  const auto o = index_options(dir);
  Xapian::WritableDatabase db(dir.string(), Xapian::DB_CREATE_OR_OPEN);
  Xapian::TermGenerator generator;
  generator.set_stemmer(Xapian::Stem(o.stemmer));
  auto start = std::chrono::steady_clock::now();
  db.begin_transaction(true);
  for (std::size_t i = 0; i < records; ++i) {
    auto [title, body] = split(payload_of(i));
    Xapian::Document doc;
    generator.set_document(doc);
    for (const auto& [name, text] : {std::pair<std::string, std::string>{"title", title}, {"body", body}}) {
      const auto& field = o.fields.at(name);
      generator.index_text(text, field.weight, field.prefix);
      generator.index_text(text, field.weight);
      generator.increase_termpos();
    }
    doc.set_data(xapian_document_data(record_ref{"main", table, record_id(i), 1}));
    const auto term = xapian_id_term("main", table, record_id(i));
    doc.add_boolean_term(term);
    db.replace_document(term, doc);
    if ((i + 1) % per_commit == 0 && i + 1 < records) {
      db.commit_transaction();
      db.begin_transaction(true);
    }
  }
  db.commit_transaction();
  auto rate = static_cast<double>(records) / seconds_since(start);
  db.close();
  return rate;
}

}  // namespace

int run_fulltext(const std::vector<std::string>& argv) {
  int status = tool::exit_usage;
  auto a = tool::args::parse_command(argv, {{"records", "dir", "json", "timeout"}, {}}, "dix bench fulltext",
                                     usage("fulltext"), status);
  if (!a) return status;
  std::string problem;
  json_report report;
  auto records = a->number("records", 200'000, per_txn, 100'000'000, problem);
  auto timeout_s = records ? a->number("timeout", 1800, 1, 86400, problem) : std::nullopt;
  if (!records || !timeout_s || !check_scratch_base(*a, problem) || !report.open(*a, problem)) {
    return tool::refuse("dix bench fulltext", problem);
  }
  try {
    scratch_dir scratch(a->get("dir"));
    store_options so;
    so.log_name = "main";
    auto store = primary_store::open(scratch.path() / "primary", so).value();
    store->create_table(table).value();
    auto backlog_start = std::chrono::steady_clock::now();
    std::uint64_t last = 0;
    for (std::size_t i = 0; i < *records; i += per_txn) {
      auto txn = store->begin();
      for (std::size_t j = i; j < std::min(i + per_txn, *records); ++j) txn.put(table, record_id(j), payload_of(j));
      last = txn.commit().value().sequence;
    }
    auto backlog_s = seconds_since(backlog_start);
    std::cerr << "backlog: " << *records << " records in " << backlog_s << " s\n";

    auto index = xapian_backend::create("fulltext", index_options(scratch.path() / "index")).value();
    auto rt = runtime::create({store}, {}, {}).value();
    registration r;
    r.backend = index;
    r.projections[table_ref{"main", table}] = [](std::string_view payload, const record_info&) -> projection_result {
      auto [title, body] = split(payload);
      return encode_fields({{"title", std::move(title)}, {"body", std::move(body)}});
    };
    auto start = std::chrono::steady_clock::now();
    const auto cpu_start = cpu_seconds();
    rt->register_index(std::move(r)).value();
    auto deadline = start + std::chrono::seconds(*timeout_s);
    for (;;) {
      auto m = rt->metrics("fulltext");
      if (m && m->readiness.state == readiness_state::ready && !m->logs.empty() && m->logs[0].durable_sequence >= last) break;
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the index was not ready in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto dix_s = seconds_since(start);
    const auto dix_cpu_s = cpu_seconds() - cpu_start;
    auto m = rt->metrics("fulltext");
    // A check that the index holds the backlog (committed documents, no admission needed).
    const auto commits = index->commits();
    const auto stored = index->stored_records().value().size();
    if (stored != *records) throw std::runtime_error("the index holds " + std::to_string(stored) + " documents");
    rt->stop().get().value();
    rt.reset();
    index.reset();
    store->close().value();

    std::uint64_t flushes = 0;
    if (m) {
      for (auto n : m->flushes) flushes += n;
    }
    // The baseline commits as often as the backend did (its barriers that committed).
    const std::size_t per_commit = static_cast<std::size_t>(std::max<std::uint64_t>(*records / std::max<std::uint64_t>(commits, 1), 1));
    const auto baseline_cpu_start = cpu_seconds();
    const auto baseline_rate = baseline_ingest(scratch.path() / "baseline", *records, per_commit);
    const auto baseline_cpu_s = cpu_seconds() - baseline_cpu_start;
    const auto dix_rate = static_cast<double>(*records) / dix_s;
    std::ostringstream json;
    json << "{\"bench\":\"fulltext\"," << build_fields() << ",\"records\":" << *records << ",\"dix_seconds\":" << dix_s
         << ",\"dix_records_per_s\":" << dix_rate << ",\"baseline_records_per_s\":" << baseline_rate
         << ",\"ratio\":" << dix_rate / baseline_rate << ",\"dix_cpu_seconds\":" << dix_cpu_s
         << ",\"baseline_cpu_seconds\":" << baseline_cpu_s << ",\"flush_requests\":" << flushes << ",\"commits\":" << commits
         << ",\"documents_per_commit\":" << per_commit << ",\"delivered_batches\":" << (m ? m->delivered_batches : 0)
         << ",\"delivered_records\":" << (m ? m->delivered_records : 0)
         << ",\"backlog_seconds\":" << backlog_s << ",\"peak_rss_mb\":" << peak_rss_mb() << "}\n";
    if (!report.write(json.str(), problem)) {
      std::cerr << "dix bench fulltext: " << problem << "\n";
      return 1;
    }
    return 0;
  } catch (const Xapian::Error& e) {
    std::cerr << "dix bench fulltext: " << e.get_description() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dix bench fulltext: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dix::bench
