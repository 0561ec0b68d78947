// The index digest: SipHash-2-4-128 and the entry encoding of <dix/digest.hpp>.
#include <dix/digest.hpp>

namespace dix {
namespace {

constexpr std::uint64_t rotl(std::uint64_t x, int b) noexcept { return (x << b) | (x >> (64 - b)); }

struct sip_state {
  std::uint64_t v0, v1, v2, v3;

  void round() noexcept {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  }
  void compress(std::uint64_t m) noexcept {  // two compression rounds (the "2" of 2-4)
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

std::uint64_t load_le(const unsigned char* p) noexcept {
  std::uint64_t w = 0;
  for (int i = 7; i >= 0; --i) w = (w << 8) | p[i];
  return w;
}

// The entries' key: fixed and public (dix/digest.hpp: drift, not an adversary).
constexpr std::uint64_t entry_k0 = 0x7869642d64696765ull;  // "egid-xid"
constexpr std::uint64_t entry_k1 = 0x2e31762d74736564ull;  // "dest-v1."

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint64_t get_u64(std::string_view in) noexcept {
  return load_le(reinterpret_cast<const unsigned char*>(in.data()));
}

}  // namespace

std::string to_hex(const hash128& h) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(15 - i)] = digits[(h.hi >> (4 * i)) & 0xF];
    out[static_cast<std::size_t>(31 - i)] = digits[(h.lo >> (4 * i)) & 0xF];
  }
  return out;
}

siphash128::siphash128(std::uint64_t k0, std::uint64_t k1) noexcept
    : v0_(k0 ^ 0x736f6d6570736575ull),
      v1_(k1 ^ 0x646f72616e646f6dull ^ 0xee),  // 0xee: the 128-bit tag's variant
      v2_(k0 ^ 0x6c7967656e657261ull),
      v3_(k1 ^ 0x7465646279746573ull) {}

void siphash128::update(const void* data, std::size_t size) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  length_ += size;
  sip_state s{v0_, v1_, v2_, v3_};
  while (size > 0 && tail_size_ > 0 && tail_size_ < 8) {  // fill the pending word first
    tail_ |= static_cast<std::uint64_t>(*p++) << (8 * tail_size_);
    --size;
    if (++tail_size_ == 8) {
      s.compress(tail_);
      tail_ = 0;
      tail_size_ = 0;
    }
  }
  for (; size >= 8; size -= 8, p += 8) s.compress(load_le(p));
  for (; size > 0; --size) tail_ |= static_cast<std::uint64_t>(*p++) << (8 * tail_size_++);
  v0_ = s.v0;
  v1_ = s.v1;
  v2_ = s.v2;
  v3_ = s.v3;
}

hash128 siphash128::finish() const noexcept {
  sip_state s{v0_, v1_, v2_, v3_};
  s.compress(tail_ | (length_ << 56));
  s.v2 ^= 0xee;
  for (int i = 0; i < 4; ++i) s.round();
  const std::uint64_t lo = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
  s.v1 ^= 0xdd;
  for (int i = 0; i < 4; ++i) s.round();
  return {lo, s.v0 ^ s.v1 ^ s.v2 ^ s.v3};
}

hash128 entry_hash(std::string_view log, std::uint32_t table, std::string_view record_id, std::uint64_t version,
                   std::string_view projection) noexcept {
  // Most entries are short: laid out in one buffer, hashed in one pass of whole words (the
  // same bytes as the pieces below; digest_test checks both ways agree).
  const std::size_t size = 1 + log.size() + 4 + 4 + record_id.size() + 8 + projection.size();
  if (size <= 512) {
    unsigned char buffer[512];
    unsigned char* at = buffer;
    auto put_bytes = [&](std::string_view bytes) {
      for (char c : bytes) *at++ = static_cast<unsigned char>(c);
    };
    auto put_le = [&](std::uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) *at++ = static_cast<unsigned char>((v >> (8 * i)) & 0xFF);
    };
    *at++ = static_cast<unsigned char>(log.size());
    put_bytes(log);
    put_le(table, 4);
    put_le(record_id.size(), 4);
    put_bytes(record_id);
    put_le(version, 8);
    put_bytes(projection);
    siphash128 h(entry_k0, entry_k1);
    h.update(buffer, size);
    return h.finish();
  }
  siphash128 h(entry_k0, entry_k1);
  const auto log_size = static_cast<unsigned char>(log.size());  // log names are 1…64 bytes
  h.update(&log_size, 1);
  h.update(log);
  unsigned char word[8];
  auto put = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) word[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xFF);
    h.update(word, static_cast<std::size_t>(bytes));
  };
  put(table, 4);
  put(record_id.size(), 4);
  h.update(record_id);
  put(version, 8);
  h.update(projection);
  return h.finish();
}

std::string index_digest::encode() const {
  std::string out;
  out.reserve(encoded_size);
  put_u64(out, sum.lo);
  put_u64(out, sum.hi);
  put_u64(out, records);
  return out;
}

std::optional<index_digest> index_digest::decode(std::string_view bytes) noexcept {
  if (bytes.size() != encoded_size) return std::nullopt;
  index_digest d;
  d.sum.lo = get_u64(bytes.substr(0, 8));
  d.sum.hi = get_u64(bytes.substr(8, 8));
  d.records = get_u64(bytes.substr(16, 8));
  return d;
}

}  // namespace dix
