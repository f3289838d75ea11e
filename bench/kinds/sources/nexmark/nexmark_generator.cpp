// SPDX-License-Identifier: Apache-2.0
#include "kinds/sources/nexmark/nexmark_generator.hpp"

#include "weir/expr/random.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace weir::nexmark {

namespace {

using expr::mix64;

constexpr std::array<std::string_view, 11> first_names{
  "Peter", "Paul", "Luke", "John", "Saul", "Vicky",
  "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::array<std::string_view, 9> last_names{
  "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"};
constexpr std::array<std::string_view, 10> us_cities{
  "Phoenix", "Los Angeles", "San Francisco", "Boise",   "Portland",
  "Bend",    "Redmond",     "Seattle",       "Kent",    "Cheyenne"};
constexpr std::array<std::string_view, 6> us_states{"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::array<std::string_view, 4> hot_channels{"Google", "Facebook", "Baidu",
                                                       "Apple"};
constexpr std::array<std::string_view, 4> hot_urls{
  "https://www.nexmark.com/google/item.htm?query=1",
  "https://www.nexmark.com/facebook/item.htm?query=1",
  "https://www.nexmark.com/baidu/item.htm?query=1",
  "https://www.nexmark.com/apple/item.htm?query=1"};

/// (x * y) >> 59 with a 128-bit product: Q59 multiplication.
inline std::uint64_t q59_product(std::uint64_t x, std::uint64_t y) noexcept {
  return expr::mul_high(x, y) << 5 | (x * y) >> 59;
}

/// 10^(1/4096) in Q59 fixed point, floor(10^(1/4096) * 2^59).
constexpr std::uint64_t price_step_q59 = 576784903449122374ULL;

/// Salt of the random stream of channel k's URL.
constexpr std::uint64_t channel_salt = 1;

std::uint32_t reverse_bits(std::uint32_t x) noexcept {
  x = ((x >> 1) & 0x55555555U) | ((x & 0x55555555U) << 1);
  x = ((x >> 2) & 0x33333333U) | ((x & 0x33333333U) << 2);
  x = ((x >> 4) & 0x0F0F0F0FU) | ((x & 0x0F0F0F0FU) << 4);
  x = ((x >> 8) & 0x00FF00FFU) | ((x & 0x00FF00FFU) << 8);
  return (x >> 16) | (x << 16);
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

} // namespace

std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::person: return "person";
    case event_kind::auction: return "auction";
    case event_kind::bid: return "bid";
  }
  return "bid";
}

// -- event_random ---------------------------------------------------------------

event_random::event_random(std::uint64_t mixed_seed, std::uint64_t event_number) noexcept
  : state_(expr::random_word(mixed_seed, static_cast<std::int64_t>(event_number), 0)) {
}

namespace {

#if defined(__SSE2__)
// Sixteen characters for two random words (bytes low first) in 16-bit lanes:
// byte b becomes 'a' + b % 26 (letters) or "a".."z", " "[b % 27] (text),
// without a division: (b * 79) >> 11 == b / 26 and (b * 19) >> 9 == b / 27
// for every byte, and 255 * 79 < 2^16.
template <bool Text>
__m128i chars_of(std::uint64_t w0, std::uint64_t w1) noexcept {
  const __m128i zero = _mm_setzero_si128();
  const __m128i mul = _mm_set1_epi16(Text ? 19 : 79);
  const __m128i mod = _mm_set1_epi16(Text ? 27 : 26);
  constexpr int shift = Text ? 9 : 11;
  const __m128i b = _mm_set_epi64x(static_cast<long long>(w1), static_cast<long long>(w0));
  __m128i lo = _mm_unpacklo_epi8(b, zero);
  __m128i hi = _mm_unpackhi_epi8(b, zero);
  lo = _mm_sub_epi16(lo, _mm_mullo_epi16(_mm_srli_epi16(_mm_mullo_epi16(lo, mul), shift), mod));
  hi = _mm_sub_epi16(hi, _mm_mullo_epi16(_mm_srli_epi16(_mm_mullo_epi16(hi, mul), shift), mod));
  const __m128i rem = _mm_packus_epi16(lo, hi);
  const __m128i c = _mm_add_epi8(rem, _mm_set1_epi8('a'));
  if constexpr (!Text)
    return c;
  const __m128i space = _mm_cmpeq_epi8(rem, _mm_set1_epi8(26));
  return _mm_or_si128(_mm_andnot_si128(space, c), _mm_and_si128(space, _mm_set1_epi8(' ')));
}
#endif

// Writes n characters at p, eight per random word (its bytes, low first):
// byte b becomes 'a' + b % 26 (letters) or "a".."z", " "[b % 27] (text).
// Sixteen at a time: it may write up to 15 bytes past p + n.
template <bool Text>
void write_chars(event_random& r, char* p, std::size_t k) {
  const std::size_t words = (k + 7) / 8;
#if defined(__SSE2__)
  std::size_t w = 0;
  for (; w + 2 <= words; w += 2) {
    const std::uint64_t w0 = r.next();
    const std::uint64_t w1 = r.next();
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8 * w), chars_of<Text>(w0, w1));
  }
  if (w < words) // the last, odd word; the other half is past n
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8 * w), chars_of<Text>(r.next(), 0));
#else
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t x = r.next();
    for (std::size_t j = 0; j < 8; ++j, x >>= 8) {
      const unsigned b = x & 0xFF;
      if constexpr (Text) {
        const unsigned rem = b - ((b * 19) >> 9) * 27;
        p[8 * w + j] = rem == 26 ? ' ' : static_cast<char>('a' + rem);
      } else {
        p[8 * w + j] = static_cast<char>('a' + (b - ((b * 79) >> 11) * 26));
      }
    }
  }
#endif
}

// Appends n characters with write_chars: written in place into the string
// grown to a multiple of 16 and cut back (a copy from a buffer compiles to
// `rep movs`, slow at this size).
template <bool Text>
void append_chars(event_random& r, std::string& out, std::int64_t n) {
  if (n <= 0)
    return;
  const std::size_t base = out.size();
  const auto k = static_cast<std::size_t>(n);
  out.resize(base + (k + 15) / 16 * 16);
  write_chars<Text>(r, out.data() + base, k);
  out.resize(base + k);
}

// The draws append_chars takes for n characters.
std::uint64_t char_draws(std::int64_t n) noexcept {
  return n <= 0 ? 0 : (static_cast<std::uint64_t>(n) + 7) / 8;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WEIR_NEXMARK_AVX512 1

// Letters with AVX-512 (F, DQ, BW, VL), written at p 64 at a time (up to
// 63 bytes past p + k): eight draws at once
// (splitmix64's counter and mix64 on eight 64-bit lanes), then byte b ->
// 'a' + b % 26 in place, the even and the odd bytes of each 16-bit lane
// apart (no widening shuffles): b / 26 == (b * 2521) >> 16 for every byte
// (a high multiply), b % 26 = b - 26 * (b / 26). A last run of at most four
// draws takes 256-bit lanes (half the work: a bid's 54-81 letters are 7-11
// draws, so 8 + 4 rather than 8 + 8). The same characters and the same
// number of draws as append_chars<false>.
// (GCC 12 warns about the deliberately undefined vector inside the
// shift intrinsics when they are inlined: a false positive.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Byte b -> 'a' + b % 26 on 64 bytes (see append_letters_avx512).
__attribute__((target("avx512f,avx512bw"))) inline __m512i
letters_of(__m512i z, __m512i inverse, __m512i mod, __m512i low_bytes, __m512i a) noexcept {
  const __m512i even = _mm512_and_si512(z, low_bytes);
  const __m512i odd = _mm512_srli_epi16(z, 8);
  const __m512i re =
    _mm512_sub_epi16(even, _mm512_mullo_epi16(_mm512_mulhi_epu16(even, inverse), mod));
  const __m512i ro =
    _mm512_sub_epi16(odd, _mm512_mullo_epi16(_mm512_mulhi_epu16(odd, inverse), mod));
  return _mm512_add_epi8(_mm512_or_si512(re, _mm512_slli_epi16(ro, 8)), a);
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl"))) void
write_letters_avx512(event_random& r, char* p, std::size_t k) {
  const std::size_t words = (k + 7) / 8;
  constexpr std::uint64_t c = expr::seq_multiplier;
  // Lane i holds the state of the (i + 1)-th draw from here.
  __m512i st = _mm512_add_epi64(
    _mm512_set1_epi64(static_cast<long long>(r.state())),
    _mm512_set_epi64(static_cast<long long>(8 * c), static_cast<long long>(7 * c),
                     static_cast<long long>(6 * c), static_cast<long long>(5 * c),
                     static_cast<long long>(4 * c), static_cast<long long>(3 * c),
                     static_cast<long long>(2 * c), static_cast<long long>(c)));
  const __m512i step = _mm512_set1_epi64(static_cast<long long>(8 * c));
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ULL));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBULL));
  const __m512i inverse = _mm512_set1_epi16(2521);
  __m512i mod = _mm512_set1_epi16(26);
  // (Opaque to the optimizer, which otherwise turns the multiply by 26
  // into five shifts and adds.)
  asm("" : "+v"(mod));
  const __m512i low_bytes = _mm512_set1_epi16(0x00FF);
  const __m512i a = _mm512_set1_epi8('a');
  std::size_t w = 0;
  for (; w + 4 < words; w += 8) {
    __m512i z = st; // mix64, lane by lane
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
    _mm512_storeu_si512(p + 8 * w, letters_of(z, inverse, mod, low_bytes, a));
    st = _mm512_add_epi64(st, step);
  }
  if (w < words) { // one to four draws: the first four lanes
    __m256i z = _mm512_castsi512_si256(st);
    z = _mm256_mullo_epi64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)),
                           _mm512_castsi512_si256(m1));
    z = _mm256_mullo_epi64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)),
                           _mm512_castsi512_si256(m2));
    z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
    const __m256i even = _mm256_and_si256(z, _mm512_castsi512_si256(low_bytes));
    const __m256i odd = _mm256_srli_epi16(z, 8);
    const __m256i inv = _mm512_castsi512_si256(inverse);
    const __m256i m = _mm512_castsi512_si256(mod);
    const __m256i re =
      _mm256_sub_epi16(even, _mm256_mullo_epi16(_mm256_mulhi_epu16(even, inv), m));
    const __m256i ro =
      _mm256_sub_epi16(odd, _mm256_mullo_epi16(_mm256_mulhi_epu16(odd, inv), m));
    const __m256i chars = _mm256_add_epi8(_mm256_or_si256(re, _mm256_slli_epi16(ro, 8)),
                                          _mm512_castsi512_si256(a));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 8 * w), chars);
  }
  r.skip(words);
}
#pragma GCC diagnostic pop

bool detect_avx512() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
         && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
#endif

} // namespace

bool& detail::letters_use_avx512() noexcept {
#if defined(WEIR_NEXMARK_AVX512)
  static bool use = detect_avx512();
#else
  static bool use = false;
#endif
  return use;
}

void event_random::letters(std::string& out, std::int64_t n) {
#if defined(WEIR_NEXMARK_AVX512)
  // (Short strings, such as a URL's three, gain nothing from 64 at a time.)
  static const bool& use_avx512 = detail::letters_use_avx512();
  if (n >= 32 && use_avx512) {
    const std::size_t base = out.size();
    const auto k = static_cast<std::size_t>(n);
    out.resize(base + k + letters_slack);
    write_letters_avx512(*this, out.data() + base, k);
    out.resize(base + k);
    return;
  }
#endif
  append_chars<false>(*this, out, n);
}

void event_random::write_letters(char* p, std::int64_t n) {
  if (n <= 0)
    return;
  const auto k = static_cast<std::size_t>(n);
#if defined(WEIR_NEXMARK_AVX512)
  static const bool& use_avx512 = detail::letters_use_avx512();
  if (n >= 32 && use_avx512) {
    write_letters_avx512(*this, p, k);
    return;
  }
#endif
  write_chars<false>(*this, p, k);
}

std::int64_t event_random::text(std::string* out, std::int64_t max_len) {
  const std::int64_t n = 3 + below(max_len - 3);
  if (out)
    append_chars<true>(*this, *out, n);
  else
    skip(char_draws(n));
  return n;
}

// -- generator ------------------------------------------------------------------

generator::generator(generator_config config)
  : config_(config),
    mixed_seed_(expr::mixed_seed(config.seed)),
    by_total_(static_cast<std::uint64_t>(config.total_proportion())),
    by_event_rate_(static_cast<std::uint64_t>(config.event_rate)) {
  std::vector<std::uint64_t> t(4096);
  t[0] = 1ULL << 59;
  for (std::size_t i = 1; i < t.size(); ++i)
    t[i] = q59_product(t[i - 1], price_step_q59);
  for (std::size_t j = 0; j < 64; ++j) {
    price_coarse_[j] = t[64 * j];
    price_fine_[j] = t[j];
  }
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto delta = static_cast<std::int64_t>(
      t[i] - q59_product(price_coarse_[i / 64], price_fine_[i % 64]));
    if (delta < -32768 || delta > 32767)
      throw std::logic_error("nexmark: the compact price table does not fit"); // (it does: <= 256)
    price_delta_[i] = static_cast<std::int16_t>(delta);
  }
}

void generator::append_channel_url(std::int64_t k, std::string& out) const {
  // Computed on demand rather than cached: 10'000 cached URLs are ~1 MB of
  // scattered strings, and a cache miss costs more than the four draws.
  event_random r{expr::random_word(mixed_seed_, k, channel_salt)};
  out += "https://www.nexmark.com/";
  r.letters(out, 3 + r.below(3));
  out += '/';
  r.letters(out, 3 + r.below(3));
  out += '/';
  r.letters(out, 3 + r.below(3));
  out += "/item.htm?query=1";
  if (r.below(10) > 0) {
    out += "&channel_id=";
    append_int(out, reverse_bits(static_cast<std::uint32_t>(k)) & 0x7FFFFFFFU);
  }
}

event_kind generator::kind_of(std::uint64_t n) const noexcept {
  const auto rem = static_cast<std::int64_t>(
    n - n / by_total_ * static_cast<std::uint64_t>(config_.total_proportion()));
  if (rem < config_.person_proportion)
    return event_kind::person;
  if (rem < config_.person_proportion + config_.auction_proportion)
    return event_kind::auction;
  return event_kind::bid;
}

std::pair<std::uint64_t, std::uint64_t> generator::block_offsets(event_kind k) const noexcept {
  const auto persons = static_cast<std::uint64_t>(config_.person_proportion);
  const auto auctions = persons + static_cast<std::uint64_t>(config_.auction_proportion);
  switch (k) {
    case event_kind::person: return {0, persons};
    case event_kind::auction: return {persons, auctions};
    case event_kind::bid: break;
  }
  return {auctions, static_cast<std::uint64_t>(config_.total_proportion())};
}

event_time generator::timestamp_of(std::uint64_t n) const noexcept {
  return config_.base_time + static_cast<std::int64_t>(n * 1000 / by_event_rate_);
}

namespace {

// Event n is number `offset` of block `epoch` (n = epoch * total + offset):
// one division, shared by the ids an event needs.
struct block_position {
  std::int64_t epoch = 0;
  std::int64_t offset = 0;
};

block_position position_of(const generator_config& c,
                           const libdivide::divider<std::uint64_t>& by_total,
                           std::uint64_t n) noexcept {
  const auto epoch = static_cast<std::int64_t>(n / by_total);
  return {epoch, static_cast<std::int64_t>(n) - epoch * c.total_proportion()};
}

std::int64_t last_person_at(const generator_config& c, block_position at) noexcept {
  const std::int64_t offset = std::min(at.offset, c.person_proportion - 1);
  return at.epoch * c.person_proportion + offset;
}

std::int64_t last_auction_at(const generator_config& c, block_position at) noexcept {
  std::int64_t epoch = at.epoch;
  std::int64_t offset = at.offset;
  if (offset < c.person_proportion) {
    // A person event: the last auction is in the previous epoch.
    --epoch;
    offset = c.auction_proportion - 1;
  } else if (offset >= c.person_proportion + c.auction_proportion) {
    offset = c.auction_proportion - 1; // a bid: after this epoch's auctions
  } else {
    offset -= c.person_proportion;
  }
  return epoch * c.auction_proportion + offset;
}

// `flag` (0 or 1) ? a : b, computed with a mask: a compiler turns a
// conditional expression on a coin flip into a branch that mispredicts
// half the time.
inline std::int64_t select_if(std::uint64_t flag, std::int64_t a, std::int64_t b) noexcept {
  const auto mask = static_cast<std::int64_t>(0 - flag);
  return (a & mask) | (b & ~mask);
}

// A random active person (a draw `word`) when the last person is `last`.
std::int64_t random_person(std::int64_t last, std::uint64_t word) noexcept {
  const std::int64_t num_people = last + 1;
  const std::int64_t active = std::min(num_people, num_active_people);
  return num_people - active
         + static_cast<std::int64_t>(
           expr::mul_high(word, static_cast<std::uint64_t>(active + person_id_lead)));
}

// A random in-flight auction (a draw `word`) when the last auction is `last`.
std::int64_t random_auction(std::int64_t last, std::uint64_t word) noexcept {
  const std::int64_t lo = std::max<std::int64_t>(last - num_in_flight_auctions, 0);
  return lo
         + static_cast<std::int64_t>(
           expr::mul_high(word, static_cast<std::uint64_t>(last - lo + 1 + auction_id_lead)));
}

} // namespace

std::int64_t generator::last_base0_person_id(std::uint64_t n) const noexcept {
  return last_person_at(config_, position_of(config_, by_total_, n));
}

std::int64_t generator::last_base0_auction_id(std::uint64_t n) const noexcept {
  return last_auction_at(config_, position_of(config_, by_total_, n));
}

namespace {

} // namespace

// The price of draw `u` (0 <= u < 6 * 4096): u = (decade, step), 6 decades
// of 4096 log-steps; 100 * 10^decade * 10^(step/4096), the last factor T[step]
// from the Q59 table.
inline std::int64_t generator::price_of(std::int64_t u) const noexcept {
  static constexpr std::array<std::uint64_t, 6> scales{100, 1'000, 10'000, 100'000,
                                                       1'000'000, 10'000'000};
  const std::uint64_t scale = scales[static_cast<std::size_t>(u / 4096)];
  const auto i = static_cast<std::size_t>(u % 4096);
  const std::uint64_t t = q59_product(price_coarse_[i / 64], price_fine_[i % 64])
                          + static_cast<std::uint64_t>(std::int64_t{price_delta_[i]});
  return static_cast<std::int64_t>(q59_product(t, scale));
}

std::int64_t generator::next_price(event_random& r) const noexcept {
  return price_of(r.below(6 * 4096));
}

std::int64_t generator::extra_size(event_random& r, std::int64_t current_size,
                                   std::int64_t desired_avg) noexcept {
  if (current_size > desired_avg)
    return 0;
  const std::int64_t avg = desired_avg - current_size;
  const std::int64_t delta = (avg * 2 + 5) / 10; // round(avg * 0.2)
  return avg - delta + (delta == 0 ? 0 : r.below(2 * delta));
}

void generator::next_extra(event_random& r, std::int64_t current_size,
                           std::int64_t desired_avg, std::string& out) const {
  r.letters(out, extra_size(r, current_size, desired_avg));
}

namespace {

constexpr bool wants(field_mask fields, std::size_t column) noexcept {
  return (fields >> column & 1U) != 0;
}

} // namespace

void generator::make_person(std::uint64_t n, person& out, field_mask fields) const {
  event_random r{mixed_seed_, n};
  out.id = last_base0_person_id(n) + first_person_id;
  out.name.assign(first_names[static_cast<std::size_t>(r.below(first_names.size()))]);
  out.name += ' ';
  out.name += last_names[static_cast<std::size_t>(r.below(last_names.size()))];
  out.email_address.clear();
  std::int64_t email_size = 0;
  if (wants(fields, person_field::email_address)) {
    r.text(out.email_address, 7);
    out.email_address += '@';
    r.text(out.email_address, 5);
    out.email_address += ".com";
    email_size = static_cast<std::int64_t>(out.email_address.size());
  } else {
    // (Two statements: the order of the draws must not be the compiler's.)
    const std::int64_t user = r.text(nullptr, 7);
    const std::int64_t host = r.text(nullptr, 5);
    email_size = user + 1 + host + 4;
  }
  out.credit_card.clear();
  for (int i = 0; i < 4; ++i) {
    if (i > 0)
      out.credit_card += ' ';
    const auto v = r.below(10000);
    char digits[4] = {static_cast<char>('0' + v / 1000), static_cast<char>('0' + v / 100 % 10),
                      static_cast<char>('0' + v / 10 % 10), static_cast<char>('0' + v % 10)};
    out.credit_card.append(digits, 4);
  }
  out.city.assign(us_cities[static_cast<std::size_t>(r.below(us_cities.size()))]);
  out.state.assign(us_states[static_cast<std::size_t>(r.below(us_states.size()))]);
  out.date_time = timestamp_of(n);
  const auto size = 8 + email_size
                    + static_cast<std::int64_t>(out.name.size() + out.credit_card.size()
                                                + out.city.size() + out.state.size());
  out.extra.clear();
  if (wants(fields, person_field::extra))
    next_extra(r, size, config_.avg_person_bytes, out.extra);
  // (else: the last draws, nothing to skip)

}

void generator::make_auction(std::uint64_t n, auction& out, field_mask fields) const {
  event_random r{mixed_seed_, n};
  const block_position at = position_of(config_, by_total_, n);
  out.id = last_auction_at(config_, at) + first_auction_id;
  const std::int64_t last_person = last_person_at(config_, at);
  if (r.below(config_.hot_seller_ratio) > 0)
    out.seller = last_person / hot_block * hot_block + first_person_id;
  else
    out.seller = random_person(last_person, r.next()) + first_person_id;
  out.category = first_category_id + r.below(num_categories);
  out.initial_bid = next_price(r);
  out.reserve = out.initial_bid + next_price(r);
  out.date_time = timestamp_of(n);
  // Expires within about twice the time until 100 auctions later.
  const std::int64_t events_for_auctions =
    num_in_flight_auctions * config_.total_proportion() / config_.auction_proportion;
  const std::int64_t horizon =
    timestamp_of(n + static_cast<std::uint64_t>(events_for_auctions)) - out.date_time;
  out.expires = out.date_time + 1 + r.below(std::max<std::int64_t>(horizon * 2, 1));
  out.item_name.clear();
  const std::int64_t item_size =
    r.text(wants(fields, auction_field::item_name) ? &out.item_name : nullptr, 20);
  out.description.clear();
  const std::int64_t description_size =
    r.text(wants(fields, auction_field::description) ? &out.description : nullptr, 100);
  const std::int64_t size = 8 + item_size + description_size + 8 + 8 + 8 + 8 + 8;
  out.extra.clear();
  if (wants(fields, auction_field::extra))
    next_extra(r, size, config_.avg_auction_bytes, out.extra);
  // (else: the last draws, nothing to skip)
}

generator::padding generator::bid_fields(std::uint64_t n, bid& out, field_mask fields) const {
  event_random r{mixed_seed_, n};
  const block_position at = position_of(config_, by_total_, n);
  // Draw 1 is the hot-auction coin and draw 2 the random auction, taken
  // only when the coin says random; the bidder's coin and draw follow, then
  // the price. Which draw holds what depends on the coins, so a draw-by-draw
  // walk would wait on each coin (a mix and a multiply, ~15 cycles) before
  // starting the next mix, and a branch on a coin mispredicts half the time.
  // Instead the five candidate draws are mixed at once and indexed, and
  // both the hot and the random value are computed, then one is selected.
  const auto d = r.ahead<5>(); // d[i] is draw i + 1
  const std::int64_t last_auction = last_auction_at(config_, at);
  const std::uint64_t hot_auction = expr::mul_high(
    d[0], static_cast<std::uint64_t>(config_.hot_auction_ratio)) != 0;
  out.auction = select_if(hot_auction, last_auction / hot_block * hot_block,
                          random_auction(last_auction, d[1]))
                + first_auction_id;
  const std::size_t bidder_at = 2 - hot_auction;
  const std::int64_t last_person = last_person_at(config_, at);
  const std::uint64_t hot_bidder = expr::mul_high(
    d[bidder_at], static_cast<std::uint64_t>(config_.hot_bidder_ratio)) != 0;
  out.bidder = select_if(hot_bidder, last_person / hot_block * hot_block + 1,
                         random_person(last_person, d[bidder_at + 1]))
               + first_person_id;
  const std::size_t price_at = bidder_at + 2 - hot_bidder;
  out.price = price_of(static_cast<std::int64_t>(expr::mul_high(d[price_at], 6 * 4096)));
  r.skip(price_at + 1);
  const bool with_channel = wants(fields, bid_field::channel);
  const bool with_url = wants(fields, bid_field::url);
  out.channel.clear();
  out.url.clear();
  if (!with_channel && !with_url) {
    // Either way the channel takes two draws (the coin, then which hot
    // channel or which channel-k): skipped without the coin's branch.
    r.skip(2);
  } else if (r.below(2) > 0) {
    const auto i = static_cast<std::size_t>(r.below(hot_channels.size()));
    if (with_channel)
      out.channel.assign(hot_channels[i]);
    if (with_url)
      out.url.assign(hot_urls[i]);
  } else {
    const auto k = r.below(num_channels);
    if (with_channel) {
      out.channel.assign("channel-");
      append_int(out.channel, k);
    }
    if (with_url)
      append_channel_url(k, out.url); // its own stream: nothing to skip
  }
  out.date_time = timestamp_of(n);
  out.extra.clear();
  if (!wants(fields, bid_field::extra))
    return {r.state(), 0}; // (the last draws, nothing to skip)
  const std::int64_t size = extra_size(r, 32, config_.avg_bid_bytes);
  return {r.state(), size};
}

void generator::make_bid(std::uint64_t n, bid& out, field_mask fields,
                         std::string* extra_to) const {
  const padding pad = bid_fields(n, out, fields);
  event_random r{pad.state};
  r.letters(extra_to ? *extra_to : out.extra, pad.size);
}


#if defined(WEIR_NEXMARK_AVX512)
namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

__attribute__((target("avx512f"))) inline __m512i set1_x8(std::int64_t v) noexcept {
  return _mm512_set1_epi64(v);
}

// mix64 on eight lanes.
__attribute__((target("avx512f,avx512dq"))) inline __m512i mix64_x8(__m512i z) noexcept {
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                         _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ULL)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                         _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBULL)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// mul_high(w, k) on eight lanes for k < 2^32, exactly: with w = h 2^32 + l,
// floor(w k / 2^64) = (h k + (l k >> 32)) >> 32, and h k + (l k >> 32)
// < 2^64.
__attribute__((target("avx512f"))) inline __m512i mul_high_x8(__m512i w, __m512i k) noexcept {
  const __m512i lo = _mm512_mul_epu32(w, k);
  const __m512i hi = _mm512_mul_epu32(_mm512_srli_epi64(w, 32), k);
  return _mm512_srli_epi64(_mm512_add_epi64(hi, _mm512_srli_epi64(lo, 32)), 32);
}

// x / d on eight lanes for 0 <= x < 2^53 and 0 < d < 2^53, exactly (the
// argument of the expression kernel's divide_by_constant_avx512).
__attribute__((target("avx512f,avx512dq"))) inline __m512i divide_x8(__m512i x,
                                                                     __m512d d) noexcept {
  return _mm512_cvttpd_epi64(_mm512_div_round_pd(
    _mm512_cvtepi64_pd(x), d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

#pragma GCC diagnostic pop

} // namespace
#endif

bool generator::bid_numbers_apply(std::uint64_t last_n) const noexcept {
#if defined(WEIR_NEXMARK_AVX512)
  static const bool& use_avx512 = detail::letters_use_avx512();
  constexpr std::int64_t small = std::int64_t{1} << 31;
  const auto& c = config_;
  return use_avx512 && last_n < (std::uint64_t{1} << 52) && c.total_proportion() < small
         && c.hot_auction_ratio < small && c.hot_bidder_ratio < small
         && c.avg_bid_bytes < small;
#else
  (void) last_n;
  return false;
#endif
}

#if defined(WEIR_NEXMARK_AVX512)
namespace {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// bid_fields's numbers for the eight bids ns[0 .. 8), into out's rows
// at .. at + 8, with the price's draw in place of the price; see
// bid_fields for the rules, which this follows step by step.
__attribute__((target("avx512f,avx512dq"))) void
bid_numbers_x8(const generator_config& c, std::uint64_t mixed_seed, const std::uint64_t* ns,
               bool with_extra, generator::bid_numbers& out, std::size_t at) noexcept {
  const __m512i seq_c = set1_x8(static_cast<std::int64_t>(expr::seq_multiplier));
  const __m512i n = _mm512_loadu_si512(ns);
  // Block position: a bid's last person and auction are its epoch's last.
  const __m512i epoch = divide_x8(n, _mm512_set1_pd(static_cast<double>(c.total_proportion())));
  const __m512i last_person = _mm512_add_epi64(
    _mm512_mullo_epi64(epoch, set1_x8(c.person_proportion)), set1_x8(c.person_proportion - 1));
  const __m512i last_auction = _mm512_add_epi64(
    _mm512_mullo_epi64(epoch, set1_x8(c.auction_proportion)), set1_x8(c.auction_proportion - 1));
  // The draws: state0 = random_word(mixed_seed, n, 0), draw i = mix64(state0 + i c).
  const __m512i state0 =
    mix64_x8(_mm512_xor_si512(set1_x8(static_cast<std::int64_t>(mixed_seed)),
                              _mm512_mullo_epi64(n, seq_c)));
  __m512i d[5];
  __m512i st = state0;
  for (auto& x : d) {
    st = _mm512_add_epi64(st, seq_c);
    x = mix64_x8(st);
  }
  const __m512i zero = _mm512_setzero_si512();
  const __m512d hot_block_pd = _mm512_set1_pd(static_cast<double>(hot_block));
  // The auction: hot with probability 1 - 1/ratio.
  const __m512i auction_hot_bits = mul_high_x8(d[0], set1_x8(c.hot_auction_ratio));
  const __mmask8 hot_auction = _mm512_test_epi64_mask(auction_hot_bits, auction_hot_bits);
  const __m512i lo_auction =
    _mm512_max_epi64(_mm512_sub_epi64(last_auction, set1_x8(num_in_flight_auctions)), zero);
  const __m512i random_auction = _mm512_add_epi64(
    lo_auction,
    mul_high_x8(d[1], _mm512_add_epi64(_mm512_sub_epi64(last_auction, lo_auction),
                                       set1_x8(1 + auction_id_lead))));
  const __m512i hot_auction_id =
    _mm512_mullo_epi64(divide_x8(last_auction, hot_block_pd), set1_x8(hot_block));
  const __m512i auction = _mm512_add_epi64(
    _mm512_mask_blend_epi64(hot_auction, random_auction, hot_auction_id), set1_x8(first_auction_id));
  // The bidder: its coin is draw 2 after a hot auction, else draw 3.
  const __m512i bidder_coin = _mm512_mask_blend_epi64(hot_auction, d[2], d[1]);
  const __m512i bidder_word = _mm512_mask_blend_epi64(hot_auction, d[3], d[2]);
  const __m512i bidder_hot_bits = mul_high_x8(bidder_coin, set1_x8(c.hot_bidder_ratio));
  const __mmask8 hot_bidder = _mm512_test_epi64_mask(bidder_hot_bits, bidder_hot_bits);
  const __m512i num_people = _mm512_add_epi64(last_person, set1_x8(1));
  const __m512i active = _mm512_min_epi64(num_people, set1_x8(num_active_people));
  const __m512i random_person = _mm512_add_epi64(
    _mm512_sub_epi64(num_people, active),
    mul_high_x8(bidder_word, _mm512_add_epi64(active, set1_x8(person_id_lead))));
  const __m512i hot_person = _mm512_add_epi64(
    _mm512_mullo_epi64(divide_x8(last_person, hot_block_pd), set1_x8(hot_block)), set1_x8(1));
  const __m512i bidder = _mm512_add_epi64(
    _mm512_mask_blend_epi64(hot_bidder, random_person, hot_person), set1_x8(first_person_id));
  // The price: draw price_at + 1, price_at = bidder_at + 2 - hot_bidder.
  const __m512i price_word = _mm512_mask_blend_epi64(
    hot_bidder, _mm512_mask_blend_epi64(hot_auction, d[4], d[3]),
    _mm512_mask_blend_epi64(hot_auction, d[3], d[2]));
  const __m512i price_draw = mul_high_x8(price_word, set1_x8(6 * 4096));
  // Draws taken through the price: price_at + 1 = 5 - hot_auction - hot_bidder;
  // then the channel's two.
  __m512i taken = set1_x8(7);
  taken = _mm512_mask_sub_epi64(taken, hot_auction, taken, set1_x8(1));
  taken = _mm512_mask_sub_epi64(taken, hot_bidder, taken, set1_x8(1));
  __m512i pad_state = _mm512_add_epi64(state0, _mm512_mullo_epi64(taken, seq_c));
  __m512i pad_size = zero;
  if (with_extra && c.avg_bid_bytes >= 32) {
    const std::int64_t avg = c.avg_bid_bytes - 32;
    const std::int64_t delta = (avg * 2 + 5) / 10;
    pad_size = set1_x8(avg - delta);
    if (delta != 0) {
      pad_state = _mm512_add_epi64(pad_state, seq_c);
      pad_size = _mm512_add_epi64(pad_size, mul_high_x8(mix64_x8(pad_state), set1_x8(2 * delta)));
    }
  }
  _mm512_storeu_si512(out.auction.data() + at, auction);
  _mm512_storeu_si512(out.bidder.data() + at, bidder);
  _mm512_storeu_si512(out.price.data() + at, price_draw); // the draw; price_of below
  _mm512_storeu_si512(out.pad_state.data() + at, pad_state);
  _mm512_storeu_si512(out.pad_size.data() + at, pad_size);
}
#pragma GCC diagnostic pop
} // namespace
#endif

void generator::bid_numbers_of(const std::uint64_t* ns, std::size_t count, bool with_extra,
                               bid_numbers& out) const {
  if (count > max_bid_numbers)
    throw std::length_error("nexmark: bid_numbers_of takes at most " +
                            std::to_string(max_bid_numbers) + " bids, got " +
                            std::to_string(count));
  std::size_t i = 0;
#if defined(WEIR_NEXMARK_AVX512)
  if (count > 0 && bid_numbers_apply(*std::max_element(ns, ns + count)))
    for (; i + 8 <= count; i += 8)
      bid_numbers_x8(config_, mixed_seed_, ns + i, with_extra, out, i);
  for (std::size_t j = 0; j < i; ++j) {
    out.price[j] = price_of(out.price[j]);
    out.date_time[j] = timestamp_of(ns[j]);
  }
#endif
  const field_mask fields =
    with_extra ? fields_of({bid_field::extra}) : field_mask{0};
  bid b;
  for (; i < count; ++i) {
    const padding pad = bid_fields(ns[i], b, fields);
    out.auction[i] = b.auction;
    out.bidder[i] = b.bidder;
    out.price[i] = b.price;
    out.date_time[i] = b.date_time;
    out.pad_state[i] = pad.state;
    out.pad_size[i] = pad.size;
  }
}

std::string generator::describe(std::uint64_t n) const {
  std::string out;
  const auto sep = [&out] { out += '|'; };
  const auto num = [&](std::int64_t v) {
    sep();
    append_int(out, v);
  };
  const auto str = [&](std::string_view s) {
    sep();
    out += s;
  };
  switch (kind_of(n)) {
    case event_kind::person: {
      person p;
      make_person(n, p);
      out.assign(1, 'P');
      num(static_cast<std::int64_t>(n));
      num(p.id);
      str(p.name);
      str(p.email_address);
      str(p.credit_card);
      str(p.city);
      str(p.state);
      num(p.date_time);
      str(p.extra);
      break;
    }
    case event_kind::auction: {
      auction a;
      make_auction(n, a);
      out.assign(1, 'A');
      num(static_cast<std::int64_t>(n));
      num(a.id);
      str(a.item_name);
      str(a.description);
      num(a.initial_bid);
      num(a.reserve);
      num(a.date_time);
      num(a.expires);
      num(a.seller);
      num(a.category);
      str(a.extra);
      break;
    }
    case event_kind::bid: {
      bid b;
      make_bid(n, b);
      out.assign(1, 'B');
      num(static_cast<std::int64_t>(n));
      num(b.auction);
      num(b.bidder);
      num(b.price);
      str(b.channel);
      str(b.url);
      num(b.date_time);
      str(b.extra);
      break;
    }
  }
  return out;
}

// -- schemas and rows -------------------------------------------------------------

schema_ptr person_schema() {
  static const schema_ptr s = make_schema({{"id", type_id::int64},
                                           {"name", type_id::string},
                                           {"email_address", type_id::string},
                                           {"credit_card", type_id::string},
                                           {"city", type_id::string},
                                           {"state", type_id::string},
                                           {"date_time", type_id::timestamp},
                                           {"extra", type_id::string}});
  return s;
}

schema_ptr auction_schema() {
  static const schema_ptr s = make_schema({{"id", type_id::int64},
                                           {"item_name", type_id::string},
                                           {"description", type_id::string},
                                           {"initial_bid", type_id::int64},
                                           {"reserve", type_id::int64},
                                           {"date_time", type_id::timestamp},
                                           {"expires", type_id::timestamp},
                                           {"seller", type_id::int64},
                                           {"category", type_id::int64},
                                           {"extra", type_id::string}});
  return s;
}

schema_ptr bid_schema() {
  static const schema_ptr s = make_schema({{"auction", type_id::int64},
                                           {"bidder", type_id::int64},
                                           {"price", type_id::int64},
                                           {"channel", type_id::string},
                                           {"url", type_id::string},
                                           {"date_time", type_id::timestamp},
                                           {"extra", type_id::string}});
  return s;
}

schema_ptr schema_of(event_kind k) {
  switch (k) {
    case event_kind::person: return person_schema();
    case event_kind::auction: return auction_schema();
    case event_kind::bid: return bid_schema();
  }
  return bid_schema();
}

namespace {

// Inline appends of valid values: the row loop stays in this function.
// Values only: validity is the same for a whole column (row_appender::complete).
inline void put(column& c, std::int64_t v) {
  c.ints.push_back(v);
}

inline void put(column& c, std::string_view v) {
  c.chars.append(v);
  c.offsets.push_back(static_cast<std::uint32_t>(c.chars.size()));
}

// A text column: the value, or an empty slot for the null of a field not
// generated.
inline void put(column& c, std::string_view v, bool generated) {
  if (generated)
    c.chars.append(v);
  c.offsets.push_back(static_cast<std::uint32_t>(c.chars.size()));
}

} // namespace

void row_appender::complete(event_kind k, record_batch& out) const {
  const auto schema = schema_of(k);
  for (std::size_t c = 0; c < schema->size(); ++c) {
    const bool generated = schema->at(c).type != type_id::string || wants(fields, c);
    out.columns[c].validity.resize(out.num_rows, generated ? 1 : 0);
  }
}

void row_appender::append_bids(const generator& g, const std::uint64_t* ns, std::size_t count,
                               record_batch& out) {
  auto& c = out.columns;
  const bool with_channel = wants(fields, bid_field::channel);
  const bool with_url = wants(fields, bid_field::url);
  const bool with_extra = wants(fields, bid_field::extra);
  const auto append_all = [](column& col, const std::array<std::int64_t, max_bids_at_once>& v,
                             std::size_t m) { col.ints.insert(col.ints.end(), v.begin(), v.begin() + m); };
  while (count > 0) {
    const std::size_t m = std::min(count, max_bids_at_once);
    // First every field but the padding, remembering where each padding's
    // draws start and how long it is; then the paddings, back to back at
    // offsets known in advance.
    std::int64_t total = 0;
    if (!with_channel && !with_url) {
      // The numbers eight bids at a time (generator::bid_numbers_of).
      g.bid_numbers_of(ns, m, with_extra, numbers_);
      append_all(c[0], numbers_.auction, m);
      append_all(c[1], numbers_.bidder, m);
      append_all(c[2], numbers_.price, m);
      append_all(c[5], numbers_.date_time, m);
      out.timestamps.insert(out.timestamps.end(), numbers_.date_time.begin(),
                            numbers_.date_time.begin() + m);
      for (std::size_t i = 0; i < m; ++i) {
        pads_[i] = generator::padding{numbers_.pad_state[i], numbers_.pad_size[i]};
        total += numbers_.pad_size[i];
        c[3].offsets.push_back(static_cast<std::uint32_t>(c[3].chars.size()));
        c[4].offsets.push_back(static_cast<std::uint32_t>(c[4].chars.size()));
      }
    } else {
      for (std::size_t i = 0; i < m; ++i) {
        const generator::padding pad = g.bid_fields(ns[i], b, fields);
        pads_[i] = pad;
        total += pad.size;
        put(c[0], b.auction);
        put(c[1], b.bidder);
        put(c[2], b.price);
        put(c[3], b.channel, with_channel);
        put(c[4], b.url, with_url);
        put(c[5], b.date_time);
        out.timestamps.push_back(b.date_time);
      }
    }
    column& extra = c[6];
    const std::size_t base = extra.chars.size();
    if (with_extra)
      extra.chars.resize(base + static_cast<std::size_t>(total) + event_random::letters_slack);
    char* at = extra.chars.data() + base;
    std::uint32_t end = static_cast<std::uint32_t>(base);
    for (std::size_t i = 0; i < m; ++i) {
      if (with_extra) {
        event_random r{pads_[i].state};
        r.write_letters(at, pads_[i].size);
        at += pads_[i].size;
        end += static_cast<std::uint32_t>(pads_[i].size);
      }
      extra.offsets.push_back(end);
    }
    if (with_extra)
      extra.chars.resize(base + static_cast<std::size_t>(total));
    out.num_rows += m;
    ns += m;
    count -= m;
  }
}

void row_appender::append(const generator& g, event_kind k, std::uint64_t n,
                          record_batch& out) {
  auto& c = out.columns;
  switch (k) {
    case event_kind::person:
      g.make_person(n, p, fields);
      put(c[0], p.id);
      put(c[1], p.name);
      put(c[2], p.email_address, wants(fields, person_field::email_address));
      put(c[3], p.credit_card);
      put(c[4], p.city);
      put(c[5], p.state);
      put(c[6], p.date_time);
      put(c[7], p.extra, wants(fields, person_field::extra));
      out.timestamps.push_back(p.date_time);
      break;
    case event_kind::auction:
      g.make_auction(n, a, fields);
      put(c[0], a.id);
      put(c[1], a.item_name, wants(fields, auction_field::item_name));
      put(c[2], a.description, wants(fields, auction_field::description));
      put(c[3], a.initial_bid);
      put(c[4], a.reserve);
      put(c[5], a.date_time);
      put(c[6], a.expires);
      put(c[7], a.seller);
      put(c[8], a.category);
      put(c[9], a.extra, wants(fields, auction_field::extra));
      out.timestamps.push_back(a.date_time);
      break;
    case event_kind::bid:
      // The padding, the bulk of a bid, straight into its column.
      g.make_bid(n, b, fields, &c[6].chars);
      c[6].offsets.push_back(static_cast<std::uint32_t>(c[6].chars.size()));
      put(c[0], b.auction);
      put(c[1], b.bidder);
      put(c[2], b.price);
      put(c[3], b.channel, wants(fields, bid_field::channel));
      put(c[4], b.url, wants(fields, bid_field::url));
      put(c[5], b.date_time);
      out.timestamps.push_back(b.date_time);
      break;
  }
  ++out.num_rows;
}

} // namespace weir::nexmark
