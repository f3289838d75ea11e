// SPDX-License-Identifier: Apache-2.0
#include "weir/core/log.hpp"

#include <spdlog/logger.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace weir {

namespace {

constexpr std::array<std::string_view, 6> level_names{"trace", "debug", "info",
                                                      "warn",  "error", "off"};

} // namespace

std::optional<log_level> parse_log_level(std::string_view text) noexcept {
  for (std::size_t i = 0; i < level_names.size(); ++i)
    if (text == level_names[i])
      return static_cast<log_level>(i);
  return std::nullopt;
}

std::string_view to_string(log_level level) noexcept {
  auto i = static_cast<std::size_t>(level);
  return i < level_names.size() ? level_names[i] : "unknown";
}

} // namespace weir

namespace weir::log {

namespace {

// Time of day to the millisecond (a job runs for hours; the status line has
// the elapsed time), the level (coloured on a terminal) and the logger's
// name, so a line is findable by component in an embedding program's stderr.
constexpr const char* pattern = "[%T.%e] [%^%l%$] %n: %v";

spdlog::level::level_enum to_spdlog(log_level level) noexcept {
  switch (level) {
    case log_level::trace:
      return spdlog::level::trace;
    case log_level::debug:
      return spdlog::level::debug;
    case log_level::info:
      return spdlog::level::info;
    case log_level::warn:
      return spdlog::level::warn;
    case log_level::error:
      return spdlog::level::err;
    case log_level::off:
      break;
  }
  return spdlog::level::off;
}

std::shared_ptr<spdlog::sinks::sink> make_stderr_sink() {
  // `automatic`: colours only when stderr is a terminal (and TERM says it
  // has colours), never in a file or a pipe a test reads.
  auto s = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
  s->set_pattern(pattern);
  return s;
}

/// One shared sink (a distributing sink, so that `replace_sink` can swap
/// what it writes to while other threads log) and the component loggers.
struct loggers {
  loggers() {
    for (auto* l : {&runtime, &checkpoint, &connectors, &state, &config}) {
      l->set_level(spdlog::level::info);
      // Warnings reach a file sink (replace_sink) before a crash can lose
      // them; the stderr sink flushes every line anyway.
      l->flush_on(spdlog::level::warn);
    }
  }

  std::shared_ptr<spdlog::sinks::sink> stderr_sink = make_stderr_sink();
  std::shared_ptr<spdlog::sinks::dist_sink_mt> shared =
    std::make_shared<spdlog::sinks::dist_sink_mt>(
      std::vector<std::shared_ptr<spdlog::sinks::sink>>{stderr_sink});
  std::mutex replace_mutex;
  std::shared_ptr<spdlog::sinks::sink> replacement; ///< null: stderr
  std::atomic<log_level> level{log_level::info};
  spdlog::logger runtime{"weir.runtime", shared};
  spdlog::logger checkpoint{"weir.checkpoint", shared};
  spdlog::logger connectors{"weir.connectors", shared};
  spdlog::logger state{"weir.state", shared};
  spdlog::logger config{"weir.config", shared};
};

loggers& all() {
  static loggers instance;
  return instance;
}

} // namespace

spdlog::logger& runtime() {
  return all().runtime;
}

spdlog::logger& checkpoint() {
  return all().checkpoint;
}

spdlog::logger& connectors() {
  return all().connectors;
}

spdlog::logger& state() {
  return all().state;
}

spdlog::logger& config() {
  return all().config;
}

void set_log_level(log_level level) {
  auto& a = all();
  a.level.store(level);
  auto l = to_spdlog(level);
  for (auto* logger : {&a.runtime, &a.checkpoint, &a.connectors, &a.state, &a.config})
    logger->set_level(l);
}

log_level current_log_level() {
  return all().level.load();
}

std::shared_ptr<spdlog::sinks::sink> replace_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  auto& a = all();
  std::lock_guard<std::mutex> guard{a.replace_mutex};
  if (sink)
    sink->set_pattern(pattern);
  a.shared->set_sinks({sink ? sink : a.stderr_sink});
  return std::exchange(a.replacement, std::move(sink));
}

} // namespace weir::log
