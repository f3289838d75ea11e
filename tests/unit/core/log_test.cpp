// SPDX-License-Identifier: Apache-2.0
#include "weir/core/log.hpp"

#include <doctest/doctest.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <iostream>
#include <memory>
#include <sstream>
#include <string>

using weir::log_level;
using weir::parse_log_level;

namespace {

/// Captures every logger's lines in a string while it lives, then puts the
/// level and the stderr sink back.
struct captured_log {
  captured_log()
    : sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(text)),
      level_before(weir::log::current_log_level()) {
    previous = weir::log::replace_sink(sink);
  }
  ~captured_log() {
    weir::log::replace_sink(previous);
    weir::log::set_log_level(level_before);
  }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;

  std::ostringstream text;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink;
  std::shared_ptr<spdlog::sinks::sink> previous;
  log_level level_before;
};

} // namespace

TEST_SUITE("core") {
TEST_CASE("parse_log_level reads the six level names and nothing else") {
  CHECK(parse_log_level("trace") == log_level::trace);
  CHECK(parse_log_level("debug") == log_level::debug);
  CHECK(parse_log_level("info") == log_level::info);
  CHECK(parse_log_level("warn") == log_level::warn);
  CHECK(parse_log_level("error") == log_level::error);
  CHECK(parse_log_level("off") == log_level::off);
  for (const char* bad : {"", "Info", "WARN", "warning", "err", "critical", " info", "info ",
                          "verbose", "0"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_log_level(bad).has_value());
  }
}

TEST_CASE("to_string gives back the name parse_log_level reads") {
  for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn,
                 log_level::error, log_level::off})
    CHECK(parse_log_level(weir::to_string(l)) == l);
  CHECK(weir::to_string(log_level::warn) == "warn");
}

TEST_CASE("the level is info until set_log_level changes it") {
  CHECK(weir::log::current_log_level() == log_level::info);
  captured_log log;
  weir::log::set_log_level(log_level::error);
  CHECK(weir::log::current_log_level() == log_level::error);
}

TEST_CASE("a message below the level is not written, one at or above it is") {
  captured_log log;
  weir::log::set_log_level(log_level::warn);
  weir::log::checkpoint().info("job '{}': restoring from checkpoint {}", "clicks", 7);
  weir::log::runtime().debug("job '{}': deployed", "clicks");
  CHECK(log.text.str().empty());

  weir::log::checkpoint().warn("job '{}': checkpoint {} failed: {}", "clicks", 8, "disk full");
  weir::log::runtime().error("job '{}': operator '{}' subtask {}/{}: stopped", "clicks", "out",
                             0, 2);
  auto text = log.text.str();
  CHECK(text.find("[warning] weir.checkpoint: job 'clicks': checkpoint 8 failed: disk full\n")
        != std::string::npos);
  CHECK(text.find("[error] weir.runtime: job 'clicks': operator 'out' subtask 0/2: stopped\n")
        != std::string::npos);
  CHECK(text.find("restoring") == std::string::npos);
}

TEST_CASE("the level applies to every component's logger") {
  captured_log log;
  SUBCASE("info shows info, hides debug") {
    weir::log::set_log_level(log_level::info);
    for (auto* l : {&weir::log::runtime(), &weir::log::checkpoint(), &weir::log::connectors(),
                    &weir::log::state(), &weir::log::config()}) {
      l->info("shown by {}", l->name());
      l->debug("hidden");
    }
    auto text = log.text.str();
    for (const char* name : {"weir.runtime", "weir.checkpoint", "weir.connectors", "weir.state",
                             "weir.config"}) {
      CAPTURE(name);
      CHECK(text.find(std::string{"[info] "} + name + ": shown by " + name) != std::string::npos);
    }
    CHECK(text.find("hidden") == std::string::npos);
  }
  SUBCASE("trace shows everything") {
    weir::log::set_log_level(log_level::trace);
    weir::log::state().trace("a trace message");
    CHECK(log.text.str().find("[trace] weir.state: a trace message") != std::string::npos);
  }
  SUBCASE("off shows nothing, not even errors") {
    weir::log::set_log_level(log_level::off);
    weir::log::runtime().error("an error");
    weir::log::runtime().critical("a broken invariant");
    CHECK(log.text.str().empty());
  }
}

TEST_CASE("replace_sink returns the sink it replaces and null puts stderr back") {
  auto first = std::make_shared<spdlog::sinks::ostream_sink_mt>(std::cout);
  CHECK(weir::log::replace_sink(first) == nullptr); // stderr until now
  auto second = std::make_shared<spdlog::sinks::ostream_sink_mt>(std::cout);
  CHECK(weir::log::replace_sink(second) == first);
  CHECK(weir::log::replace_sink(nullptr) == second);
  CHECK(weir::log::replace_sink(nullptr) == nullptr);
}
}
