// SPDX-License-Identifier: Apache-2.0
#pragma once
// The http source's reader (http_source.cpp), for `http::add_source` (`job::from`) (http.cpp).

#include "weir/http/source.hpp"

namespace weir::kinds::http {

/// A reader taking whole requests from `handle`'s queue; fails at `open`
/// (unrecoverable_error) when no server or host attached the handle.
source_reader_ptr make_reader(http_source_handle_ptr handle, bad_record_policy policy,
                              bool retain, bad_record_handler on_bad);

} // namespace weir::kinds::http
