// SPDX-License-Identifier: Apache-2.0
#include "lmdb_file_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace weir::internal {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the LMDB file check reads a little-endian host's file");

// LMDB 0.9's on-disk layout (mdb.c: MDB_page, MDB_node, MDB_db, MDB_meta)
// on a 64-bit host: page numbers and transaction ids are 8 bytes.
constexpr std::uint32_t mdb_magic = 0xBEEFC0DE;
constexpr std::uint32_t mdb_data_version = 1;
constexpr std::uint64_t page_header = 16; // pgno u64, pad u16, flags u16, lower u16, upper u16
constexpr std::uint64_t node_header = 8;  // lo u16, hi u16, flags u16, ksize u16
constexpr std::uint64_t db_record = 48;   // MDB_db
constexpr std::uint64_t meta_bytes = 8 + 8 + 8 + 2 * db_record + 8 + 8;
constexpr std::uint64_t invalid_page = ~std::uint64_t{0};
constexpr std::uint64_t num_metas = 2;
constexpr unsigned max_depth = 32;

constexpr std::uint16_t p_branch = 0x01;
constexpr std::uint16_t p_leaf = 0x02;
constexpr std::uint16_t p_overflow = 0x04;
constexpr std::uint16_t p_meta = 0x08;
constexpr std::uint16_t f_bigdata = 0x01;
constexpr std::uint16_t f_subdata = 0x02;
constexpr std::uint16_t mdb_integerkey = 0x08;

template <class T>
T load(const unsigned char* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

struct db_info {
  std::uint16_t flags = 0;
  std::uint16_t depth = 0;
  std::uint64_t entries = 0;
  std::uint64_t root = invalid_page;

  static db_info read(const unsigned char* p) {
    db_info d;
    d.flags = load<std::uint16_t>(p + 4);
    d.depth = load<std::uint16_t>(p + 6);
    d.entries = load<std::uint64_t>(p + 32);
    d.root = load<std::uint64_t>(p + 40);
    return d;
  }
};

struct meta_info {
  std::uint32_t magic = 0;
  std::uint32_t version = 0;
  std::uint32_t page_size = 0; // md_pad of the free database's record
  db_info free_db;
  db_info main_db;
  std::uint64_t last_pg = 0;
  std::uint64_t txnid = 0;
  std::uint16_t page_flags = 0;
};

class walker {
public:
  walker(int fd, std::uint64_t file_bytes) : fd_(fd), file_bytes_(file_bytes) {}

  lmdb_file_check run() {
    lmdb_file_check out;
    out.file_bytes = file_bytes_;
    unsigned char head[page_header + meta_bytes];
    meta_info m[num_metas];
    if (!read_at(0, head, sizeof head))
      return finish(out, lmdb_file_check::verdict::truncated,
                    "the file is too short for its first meta page");
    m[0] = parse_meta(head);
    psize_ = m[0].page_size;
    if (psize_ < 512 || psize_ > 65536 || !std::has_single_bit(psize_))
      return finish(out, lmdb_file_check::verdict::damaged,
                    "meta page 0 gives a page size of " + std::to_string(psize_));
    if (!read_at(psize_, head, sizeof head))
      return finish(out, lmdb_file_check::verdict::truncated,
                    "the file is too short for its second meta page");
    m[1] = parse_meta(head);
    for (std::uint64_t i = 0; i < num_metas; ++i) {
      const auto& x = m[i];
      const auto which = "meta page " + std::to_string(i);
      if (!(x.page_flags & p_meta) || x.magic != mdb_magic || x.version != mdb_data_version)
        return finish(out, lmdb_file_check::verdict::damaged,
                      which + " is not an LMDB meta page of version 1");
      if (x.page_size != psize_)
        return finish(out, lmdb_file_check::verdict::damaged,
                      which + " gives another page size");
      // Transaction t writes meta page t % 2; both start at 0.
      if (x.txnid != 0 && x.txnid % 2 != i)
        return finish(out, lmdb_file_check::verdict::damaged,
                      which + " holds transaction " + std::to_string(x.txnid)
                        + ", of the other page's parity");
    }
    const auto diff = m[0].txnid > m[1].txnid ? m[0].txnid - m[1].txnid
                                              : m[1].txnid - m[0].txnid;
    if (diff > 1 && m[0].txnid != 0)
      return finish(out, lmdb_file_check::verdict::damaged,
                    "the meta pages hold transactions " + std::to_string(m[0].txnid) + " and "
                      + std::to_string(m[1].txnid) + ", not consecutive ones");
    // LMDB opens the meta page with the higher transaction id.
    const auto& newest = m[m[0].txnid < m[1].txnid ? 1 : 0];
    out.txnid = newest.txnid;
    last_pg_ = newest.last_pg;
    txnid_ = newest.txnid;
    file_pages_ = file_bytes_ / psize_;
    out.needed_bytes = (last_pg_ + 1) * psize_;
    if (last_pg_ < num_metas - 1)
      return finish(out, lmdb_file_check::verdict::damaged,
                    "the newest meta page's last page is " + std::to_string(last_pg_));
    // One bit per page of the file: a page past its end is never claimed
    // (truncated), so a damaged last_pg cannot make this allocate much.
    seen_.assign(file_pages_, false);
    if (newest.free_db.flags != mdb_integerkey || newest.main_db.flags != 0)
      return finish(out, lmdb_file_check::verdict::damaged,
                    "the newest meta page has damaged database flags");
    if (!walk_db(newest.free_db, "free-page", role::free_list)
        || !walk_db(newest.main_db, "main", role::main))
      return finish(out, verdict_, problem_);
    std::sort(free_pages_.begin(), free_pages_.end());
    for (std::size_t i = 0; i < free_pages_.size(); ++i) {
      const auto pg = free_pages_[i];
      if (pg < num_metas || pg > last_pg_)
        return finish(out, lmdb_file_check::verdict::damaged,
                      "the free list names page " + std::to_string(pg) + ", outside [2, "
                        + std::to_string(last_pg_) + "]");
      // Free pages past the file's end are its unwritten tail.
      if ((i > 0 && free_pages_[i - 1] == pg) || (pg < file_pages_ && seen_[pg]))
        return finish(out, lmdb_file_check::verdict::damaged,
                      "the free list names page " + std::to_string(pg)
                        + ", which is in use or named twice");
    }
    // Every page below LMDB's next page is reachable or free (mdb_audit's
    // invariant), so a file may end early only by free pages.
    const auto tail = last_pg_ + 1 > file_pages_ ? last_pg_ + 1 - file_pages_ : 0;
    const auto free_in_tail = static_cast<std::uint64_t>(
      free_pages_.end()
      - std::lower_bound(free_pages_.begin(), free_pages_.end(), file_pages_));
    if (free_in_tail < tail)
      return finish(out, lmdb_file_check::verdict::truncated,
                    "pages " + std::to_string(file_pages_) + " to " + std::to_string(last_pg_)
                      + " are missing and not all of them are free");
    return out;
  }

private:
  enum class role { free_list, main, named };

  static meta_info parse_meta(const unsigned char* p) {
    meta_info m;
    m.page_flags = load<std::uint16_t>(p + 10);
    const auto* x = p + page_header;
    m.magic = load<std::uint32_t>(x);
    m.version = load<std::uint32_t>(x + 4);
    m.page_size = load<std::uint32_t>(x + 24);
    m.free_db = db_info::read(x + 24);
    m.main_db = db_info::read(x + 24 + db_record);
    m.last_pg = load<std::uint64_t>(x + 24 + 2 * db_record);
    m.txnid = load<std::uint64_t>(x + 32 + 2 * db_record);
    return m;
  }

  static lmdb_file_check finish(lmdb_file_check out, lmdb_file_check::verdict v,
                                std::string problem) {
    out.result = v;
    out.problem = std::move(problem);
    return out;
  }

  bool fail(lmdb_file_check::verdict v, std::string problem) {
    if (problem_.empty()) {
      verdict_ = v;
      problem_ = std::move(problem);
    }
    return false;
  }

  bool read_at(std::uint64_t offset, unsigned char* buf, std::uint64_t n) {
    std::uint64_t done = 0;
    while (done < n) {
      auto r = ::pread(fd_, buf + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0) {
        fail(lmdb_file_check::verdict::damaged, std::string{"reading: "} + std::strerror(errno));
        return false;
      }
      if (r == 0)
        return false;
      done += static_cast<std::uint64_t>(r);
    }
    return true;
  }

  /// Claims pages [pg, pg + n) for `what`: each inside [2, last_pg], inside
  /// the file and not claimed before.
  bool claim(std::uint64_t pg, std::uint64_t n, const std::string& what) {
    if (n == 0 || pg < num_metas || pg > last_pg_ || n > last_pg_ - pg + 1)
      return fail(lmdb_file_check::verdict::damaged,
                  what + " points to page " + std::to_string(pg)
                    + (n > 1 ? " (+" + std::to_string(n - 1) + ")" : "") + ", outside [2, "
                    + std::to_string(last_pg_) + "]");
    if (pg + n > file_pages_)
      return fail(lmdb_file_check::verdict::truncated,
                  what + " needs page " + std::to_string(pg + n - 1)
                    + ", past the end of the file");
    for (std::uint64_t i = pg; i < pg + n; ++i) {
      if (seen_[i])
        return fail(lmdb_file_check::verdict::damaged,
                    what + " points to page " + std::to_string(i) + ", reached twice");
      seen_[i] = true;
    }
    return true;
  }

  bool walk_db(const db_info& db, const std::string& name, role r) {
    const auto what = "the " + name + " database";
    if (db.root == invalid_page) {
      if (db.depth != 0 || db.entries != 0)
        return fail(lmdb_file_check::verdict::damaged, what + " is empty with entries");
      return true;
    }
    if (db.depth == 0 || db.depth > max_depth)
      return fail(lmdb_file_check::verdict::damaged,
                  what + " has a depth of " + std::to_string(db.depth));
    return walk_page(db.root, db.depth, what, r, {}, {});
  }

  /// Whether key `a` sorts before key `b` in a database of role `r`: the
  /// free-page database's keys are transaction ids (MDB_INTEGERKEY, 8
  /// bytes), the others' bytes compared unsigned, a prefix first (LMDB's
  /// default `mdb_cmp_memn`).
  static bool before(std::string_view a, std::string_view b, role r) {
    if (r == role::free_list && a.size() == 8 && b.size() == 8)
      return load<std::uint64_t>(reinterpret_cast<const unsigned char*>(a.data()))
             < load<std::uint64_t>(reinterpret_cast<const unsigned char*>(b.data()));
    return a < b; // char_traits<char> compares as unsigned char
  }

  /// A database name or key for a message: printable ASCII as is, other
  /// bytes as \xNN, at most 64 bytes.
  static std::string printable(std::string_view k) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < k.size() && i < 64; ++i) {
      const auto c = static_cast<unsigned char>(k[i]);
      if (c >= 0x20 && c < 0x7f && c != '\\') {
        out += static_cast<char>(c);
      } else {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
      }
    }
    return k.size() > 64 ? out + "..." : out;
  }

  /// Walks the subtree at page `pg`, `depth` levels high; every key in it
  /// must lie in [lo, hi) (an empty optional: unbounded), as the separator
  /// keys of the branch pages above route a search (`mdb_node_search`).
  bool walk_page(std::uint64_t pg, unsigned depth, const std::string& what, role r,
                 std::optional<std::string> lo_key, std::optional<std::string> hi_key) {
    if (!claim(pg, 1, what))
      return false;
    std::vector<unsigned char> page(psize_);
    if (!read_at(pg * psize_, page.data(), psize_))
      return fail(lmdb_file_check::verdict::truncated,
                  what + " needs page " + std::to_string(pg) + ", past the end of the file");
    const auto here = what + ", page " + std::to_string(pg);
    const auto* p = page.data();
    const auto flags = load<std::uint16_t>(p + 10);
    const auto lower = load<std::uint16_t>(p + 12);
    const auto upper = load<std::uint16_t>(p + 14);
    if (load<std::uint64_t>(p) != pg)
      return fail(lmdb_file_check::verdict::damaged, here + ": the page names itself "
                                                        + std::to_string(load<std::uint64_t>(p)));
    const auto want = depth > 1 ? p_branch : p_leaf;
    if (flags != want)
      return fail(lmdb_file_check::verdict::damaged,
                  here + ": flags " + std::to_string(flags) + ", expected a "
                    + (depth > 1 ? "branch" : "leaf") + " page");
    if (lower < page_header || (lower - page_header) % 2 != 0 || lower > upper
        || upper > psize_ || lower == page_header)
      return fail(lmdb_file_check::verdict::damaged,
                  here + ": bad bounds " + std::to_string(lower) + ".." + std::to_string(upper));
    const unsigned n = (lower - page_header) / 2;
    // The nodes, each EVEN(its size) bytes (a branch node: header and key; a
    // leaf node: header, key and its value or an overflow page number), fill
    // [upper, page end) exactly, without gaps or overlaps: LMDB adds a node
    // just below `upper` and closes the gap when it deletes one
    // (`mdb_node_add`, `mdb_node_del`). A node size or offset that is off by
    // a few bytes still lies inside the page, but a delete would then move
    // memory by the wrong length.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> extents; // offset, bytes
    extents.reserve(n);
    std::vector<std::string_view> keys;
    keys.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      const std::uint64_t off = load<std::uint16_t>(p + page_header + 2 * i);
      if (off < upper || off + node_header > psize_)
        return fail(lmdb_file_check::verdict::damaged,
                    here + ": node " + std::to_string(i) + " at a bad offset");
      const auto* node = p + off;
      const std::uint64_t nflags = load<std::uint16_t>(node + 4);
      const std::uint64_t ksize = load<std::uint16_t>(node + 6);
      if (off + node_header + ksize > psize_)
        return fail(lmdb_file_check::verdict::damaged,
                    here + ": node " + std::to_string(i) + "'s key runs past the page");
      std::uint64_t bytes = node_header + ksize;
      if (depth == 1)
        bytes += nflags == f_bigdata ? 8 : (load<std::uint16_t>(node)
                                            | std::uint64_t{load<std::uint16_t>(node + 2)} << 16);
      extents.emplace_back(off, bytes + (bytes & 1));
      keys.emplace_back(reinterpret_cast<const char*>(node + node_header), ksize);
    }
    std::sort(extents.begin(), extents.end());
    std::uint64_t end = upper;
    for (const auto& [off, bytes] : extents) {
      if (off != end)
        return fail(lmdb_file_check::verdict::damaged,
                    here + ": a node at byte " + std::to_string(off) + " where "
                      + (off < end ? "another node" : "a node or the free space")
                      + " ends at byte " + std::to_string(end)
                      + " (a node offset or size is damaged)");
      end = off + bytes;
    }
    if (end != psize_)
      return fail(lmdb_file_check::verdict::damaged,
                  here + ": its nodes end at byte " + std::to_string(end)
                    + ", not at the page's end (a node size is damaged)");
    // Keys in order, inside the range the branch pages above give: a
    // search (and so a delete) could not find one that is not. A branch
    // page's first key is never compared.
    for (unsigned i = depth > 1 ? 1 : 0; i < n; ++i) {
      const bool low = i > (depth > 1 ? 1u : 0u) ? !before(keys[i - 1], keys[i], r)
                                                 : lo_key && before(keys[i], *lo_key, r);
      if (low || (hi_key && !before(keys[i], *hi_key, r)))
        return fail(lmdb_file_check::verdict::damaged,
                    here + ": key " + std::to_string(i) + " ('" + printable(keys[i])
                      + "') is out of order");
    }
    for (unsigned i = 0; i < n; ++i) {
      const std::uint64_t off = load<std::uint16_t>(p + page_header + 2 * i);
      const auto* node = p + off;
      const std::uint64_t lo = load<std::uint16_t>(node);
      const std::uint64_t hi = load<std::uint16_t>(node + 2);
      const std::uint64_t nflags = load<std::uint16_t>(node + 4);
      const std::uint64_t ksize = load<std::uint16_t>(node + 6);
      if (depth > 1) {
        const auto child = lo | (hi << 16) | (nflags << 32);
        auto child_lo = i == 0 ? lo_key : std::optional<std::string>{keys[i]};
        auto child_hi = i + 1 == n ? hi_key : std::optional<std::string>{keys[i + 1]};
        if (!walk_page(child, depth - 1, what, r, std::move(child_lo), std::move(child_hi)))
          return false;
        continue;
      }
      const auto dsize = lo | (hi << 16);
      const auto* data = node + node_header + ksize;
      const auto room = psize_ - (off + node_header + ksize);
      std::vector<unsigned char> big;
      if (nflags == f_bigdata) {
        if (room < 8)
          return fail(lmdb_file_check::verdict::damaged,
                      here + ": node " + std::to_string(i) + "'s overflow page number runs past the page");
        const auto first = load<std::uint64_t>(data);
        const auto pages = (page_header - 1 + dsize) / psize_ + 1;
        const auto big_what = here + " node " + std::to_string(i) + "'s value";
        if (!claim(first, pages, big_what))
          return false;
        unsigned char head[page_header];
        if (!read_at(first * psize_, head, sizeof head))
          return fail(lmdb_file_check::verdict::truncated,
                      big_what + " lies past the end of the file");
        if (load<std::uint64_t>(head) != first || load<std::uint16_t>(head + 10) != p_overflow
            || load<std::uint32_t>(head + 12) != pages)
          return fail(lmdb_file_check::verdict::damaged,
                      big_what + ": page " + std::to_string(first)
                        + " is not its overflow page of " + std::to_string(pages) + " pages");
        if (r == role::free_list) {
          big.resize(dsize);
          if (!read_at(first * psize_ + page_header, big.data(), dsize))
            return fail(lmdb_file_check::verdict::truncated,
                        big_what + " lies past the end of the file");
          data = big.data();
        }
      } else if (nflags == 0 || (nflags == f_subdata && r == role::main)) {
        if (dsize > room)
          return fail(lmdb_file_check::verdict::damaged,
                      here + ": node " + std::to_string(i) + "'s value runs past the page");
      } else {
        return fail(lmdb_file_check::verdict::damaged,
                    here + ": node " + std::to_string(i) + " has flags "
                      + std::to_string(nflags));
      }
      if (r == role::free_list) {
        // An IDL: a count, then that many page numbers.
        if (ksize != 8 || dsize < 8 || dsize % 8 != 0
            || load<std::uint64_t>(data) != dsize / 8 - 1)
          return fail(lmdb_file_check::verdict::damaged,
                      here + ": free-list entry " + std::to_string(i) + " is malformed");
        // Keyed by the transaction that freed the pages, listed in
        // descending order (LMDB's IDLs, midl.h).
        if (load<std::uint64_t>(node + node_header) > txnid_)
          return fail(lmdb_file_check::verdict::damaged,
                      here + ": free-list entry " + std::to_string(i)
                        + " names a transaction after the newest");
        for (std::uint64_t j = 1; j < dsize / 8; ++j) {
          const auto freed = load<std::uint64_t>(data + 8 * j);
          if (j > 1 && freed >= load<std::uint64_t>(data + 8 * (j - 1)))
            return fail(lmdb_file_check::verdict::damaged,
                        here + ": free-list entry " + std::to_string(i) + " is out of order");
          free_pages_.push_back(freed);
        }
      } else if (nflags == f_subdata) {
        if (dsize != db_record)
          return fail(lmdb_file_check::verdict::damaged,
                      here + ": node " + std::to_string(i) + " is not a database record");
        const auto db = db_info::read(data);
        const std::string name{reinterpret_cast<const char*>(node + node_header), ksize};
        if (db.flags != 0)
          return fail(lmdb_file_check::verdict::damaged,
                      "the record of database '" + printable(name) + "' has damaged flags");
        if (!walk_db(db, "'" + printable(name) + "'", role::named))
          return false;
      }
    }
    return true;
  }

  int fd_;
  std::uint64_t file_bytes_;
  std::uint64_t psize_ = 0;
  std::uint64_t last_pg_ = 0;
  std::uint64_t txnid_ = 0;
  std::uint64_t file_pages_ = 0;
  std::vector<bool> seen_;
  std::vector<std::uint64_t> free_pages_;
  lmdb_file_check::verdict verdict_ = lmdb_file_check::verdict::sound;
  std::string problem_;
};

} // namespace

lmdb_file_check check_lmdb_file(const std::string& path) {
  lmdb_file_check out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.result = errno == ENOENT ? lmdb_file_check::verdict::missing
                                 : lmdb_file_check::verdict::damaged;
    out.problem = std::string{"cannot open it: "} + std::strerror(errno);
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    out.result = lmdb_file_check::verdict::damaged;
    out.problem = std::string{"cannot stat it: "} + std::strerror(errno);
    ::close(fd);
    return out;
  }
  out = walker{fd, static_cast<std::uint64_t>(st.st_size)}.run();
  ::close(fd);
  return out;
}

} // namespace weir::internal
