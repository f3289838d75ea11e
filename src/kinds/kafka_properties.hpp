// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the Kafka source and sink share at load time: checking their
// `properties` the way librdkafka will when the job starts, so that
// `weir validate` catches what `weir run` would fail on.
#include "config/reader.hpp"
#include "weir/format/format.hpp"

#include <string>
#include <utility>
#include <vector>

namespace weir::kinds::kafka_properties {

/// The client a check builds: a consumer (the source) or a producer (the sink).
enum class client { consumer, producer };

/// One property as the pipeline file wrote it, with the position of its key.
struct property {
  std::string name;
  std::string value;
  config::pos at;
};

/// Checks `props` as librdkafka 2.x will when the job starts, and reports each
/// problem through `r` (file:line:col, so `weir validate` exits 2):
/// - every name and value (`rd_kafka_conf_set`: an unknown property, a value
///   out of its range or of the wrong type), at the property's key;
/// - then the combination, with `defaults` (what weir sets before the user's
///   properties) and `managed` (what weir sets after them) applied as at run
///   time, by creating a client of kind `kind` on that configuration without
///   brokers (`rd_kafka_new`, destroyed at once; nothing connects): it rejects
///   inconsistent values such as `fetch.max.bytes` below `message.max.bytes`.
///   The error is reported at the first property it names, else at `table_at`.
/// Takes a few milliseconds and two short-lived librdkafka threads.
void check(config::reader& r, client kind, const std::vector<property>& props,
           const std::vector<std::pair<std::string, std::string>>& defaults,
           const std::vector<std::pair<std::string, std::string>>& managed,
           config::pos table_at);

/// Reads a `schema_registry = { url = ..., ... }` table (docs/kinds/formats/avro.md)
/// into `out`: `url` (required, http:// or https://), `basic_auth_user_info`
/// ("user:password") or `basic_auth_user_info_env` (the environment variable
/// holding it, read now; unset or empty is an error), `ca_file` (must be
/// readable), and, when `with_strategy` (the sink), `subject_strategy`
/// ("topic" | "record" | "topic_record"). Problems are reported through `r`
/// at their keys; a build without libcurl refuses the table. Returns false
/// when the table is absent.
bool read_schema_registry(config::reader& r, const config::key_list& keys,
                          format::schema_registry_options& out, bool with_strategy);

} // namespace weir::kinds::kafka_properties
