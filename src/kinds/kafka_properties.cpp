// SPDX-License-Identifier: Apache-2.0
#include "kinds/kafka_properties.hpp"

#include <librdkafka/rdkafka.h>

#include <memory>

namespace weir::kinds::kafka_properties {

namespace {

struct conf_deleter {
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
};

// The throwaway client logs that it has no brokers: nothing a user should see.
void silent(const rd_kafka_t*, int, const char*, const char*) {}

bool set(rd_kafka_conf_t* conf, const std::string& name, const std::string& value,
         std::string& error) {
  char err[512];
  if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK)
    return true;
  error = err;
  while (!error.empty() && (error.back() == '\n' || error.back() == ' '))
    error.pop_back();
  return false;
}

} // namespace

void check(config::reader& r, client kind, const std::vector<property>& props,
           const std::vector<std::pair<std::string, std::string>>& defaults,
           const std::vector<std::pair<std::string, std::string>>& managed,
           config::pos table_at) {
  std::unique_ptr<rd_kafka_conf_t, conf_deleter> conf{rd_kafka_conf_new()};
  std::string error;
  for (const auto& [name, value] : defaults)
    set(conf.get(), name, value, error);
  bool ok = true;
  for (const auto& p : props) {
    if (!set(conf.get(), p.name, p.value, error)) {
      r.fail(p.at, "properties." + p.name + ": " + error,
             {"hint: the librdkafka properties are listed in its CONFIGURATION.md"});
      ok = false;
    }
  }
  if (!ok)
    return;
  for (const auto& [name, value] : managed)
    set(conf.get(), name, value, error);
  // No bootstrap.servers: the client starts without connecting anywhere.
  rd_kafka_conf_set_log_cb(conf.get(), silent);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(kind == client::consumer ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER,
                                conf.get(), err, sizeof err);
  if (rk) {
    conf.release(); // rd_kafka_new took it
    rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return;
  }
  // Point at the first property the message names (librdkafka quotes them).
  const std::string message = err;
  config::pos at = table_at;
  for (const auto& p : props)
    if (message.find("`" + p.name + "`") != std::string::npos
        || message.find(p.name) != std::string::npos) {
      at = p.at;
      break;
    }
  r.fail(at, "properties: librdkafka rejects this configuration: " + message);
}

} // namespace weir::kinds::kafka_properties
