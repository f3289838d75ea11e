// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

namespace weir::internal {

/// What `check_lmdb_file` found.
struct lmdb_file_check {
  enum class verdict : std::uint8_t {
    sound,     ///< every page LMDB can reach is in the file and well formed
    missing,   ///< no data.mdb
    truncated, ///< a page LMDB can reach lies past the file's end
    damaged,   ///< a meta, branch, leaf or overflow page is malformed
  };
  verdict result = verdict::sound;
  std::string problem;           ///< empty when sound
  std::uint64_t txnid = 0;       ///< of the meta page LMDB opens (the newest)
  std::uint64_t file_bytes = 0;
  std::uint64_t needed_bytes = 0; ///< where the newest meta's last page ends

  bool ok() const noexcept { return result == verdict::sound; }
};

/// Checks an LMDB data file (`data.mdb`, LMDB 0.9 format, version 1) before
/// LMDB maps it, reading it with `pread` only.
///
/// LMDB trusts its file: a page number past the end of a truncated file is
/// a SIGBUS when read through the map, a damaged node size or page number a
/// wild read or a write over live pages. This walks what the newest meta page
/// reaches, as LMDB would: both meta pages (magic, version, page size, their
/// transaction ids one apart with the page's parity, so a flipped id cannot
/// make LMDB open a stale snapshot), then every branch, leaf and overflow page
/// of the free-page database, the main database and each named database in
/// it. Every page must lie in `[2, last_pg]` and inside the file, carry its
/// own number and the expected kind, and be reached once; its nodes must
/// fill the space from its `upper` bound to its end exactly, without gaps or
/// overlaps (a node offset or size a few bytes off is a wild `memmove` in
/// LMDB's next delete on that page), and its keys must be in order and
/// inside the range the separator keys above it give. Every page the free
/// list names must be in `[2, last_pg]`, named once and not reached; each
/// free-list entry is keyed by a transaction no newer than the meta page's
/// and lists its pages in descending order. A file may end before `last_pg` (LMDB counts
/// pages a transaction allocated and freed again without writing them): that
/// is sound when every page of the missing tail is on the free list (every
/// page below LMDB's next page is either reached or free: `mdb_audit`'s
/// invariant), so that none of them is ever read.
///
/// Reads each branch and leaf page once (not the bodies of overflow pages):
/// O(pages of keys) time, one bit per page of memory. The file must not be
/// written meanwhile by another process (a concurrent writer may make a sound
/// file look damaged; the caller retries when the newest txnid changed).
///
/// Never throws; I/O errors other than a short read are `damaged` with the
/// `strerror` text.
lmdb_file_check check_lmdb_file(const std::string& path);

} // namespace weir::internal
