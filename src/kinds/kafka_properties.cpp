// SPDX-License-Identifier: Apache-2.0
#include "kinds/kafka_properties.hpp"

#include <librdkafka/rdkafka.h>

#include <cstdlib>
#include <fstream>
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

bool read_schema_registry(config::reader& r, const config::key_list& keys,
                          format::schema_registry_options& out, bool with_strategy) {
  using config::pos_of;
  const auto* t = r.subtable("schema_registry");
  if (t == nullptr)
    return false;
  auto sr = r.sub(*t, "schema_registry");
  sr.check_keys(keys);
  if (!format::schema_registry_built()) {
    r.fail(pos_of(*r.get("schema_registry")), std::string{format::schema_registry_not_built});
    return true;
  }
  if (auto u = sr.string("url", true, true)) {
    if (u->value.rfind("http://", 0) != 0 && u->value.rfind("https://", 0) != 0)
      sr.fail(pos_of(*u->node), "schema_registry.url must start with http:// or https://, got "
                                  + config::quote(u->value),
              {"hint: url = \"http://127.0.0.1:8081\" (Apicurio: .../apis/ccompat/v7)"});
    else
      out.url = u->value;
  }
  auto ui = sr.string("basic_auth_user_info", false, true);
  auto env = sr.string("basic_auth_user_info_env", false, true);
  if (ui && env) {
    sr.fail(pos_of(*env->node),
            "basic_auth_user_info and basic_auth_user_info_env exclude each other");
  } else if (ui) {
    if (ui->value.find(':') == std::string::npos)
      sr.fail(pos_of(*ui->node), "schema_registry.basic_auth_user_info must be "
                                 "\"user:password\"");
    else
      out.basic_auth_user_info = ui->value;
  } else if (env) {
    const char* v = std::getenv(env->value.c_str());
    if (v == nullptr || *v == '\0')
      sr.fail(pos_of(*env->node), "environment variable " + env->value
                                    + " (basic_auth_user_info_env) is not set or empty",
              {"hint: export " + env->value + "=user:password"});
    else if (std::string_view{v}.find(':') == std::string_view::npos)
      sr.fail(pos_of(*env->node), "environment variable " + env->value
                                    + " must hold \"user:password\"");
    else
      out.basic_auth_user_info = v;
  }
  if (auto ca = sr.string("ca_file", false, true)) {
    if (!std::ifstream{ca->value})
      sr.fail(pos_of(*ca->node), "cannot read schema_registry.ca_file " + config::quote(ca->value));
    else
      out.ca_file = ca->value;
  }
  if (with_strategy)
    if (auto st = sr.choice("subject_strategy", {"topic", "record", "topic_record"}))
      out.strategy = st->value == "record"         ? format::subject_strategy::record
                     : st->value == "topic_record" ? format::subject_strategy::topic_record
                                                   : format::subject_strategy::topic;
  return true;
}

} // namespace weir::kinds::kafka_properties
