// SPDX-License-Identifier: Apache-2.0
#include "output_path.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weir::config {

namespace {

namespace fs = std::filesystem;

std::string shown(const fs::path& p) {
  return quote(p.empty() ? std::string{"."} : p.string());
}

/// Whether a file can be created in the existing directory `dir`; the
/// reason (strerror) if not.
std::optional<std::string> cannot_create_in(const fs::path& dir) {
  const std::string d = dir.empty() ? std::string{"."} : dir.string();
  int fd = ::open(d.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return std::nullopt;
  }
  // O_TMPFILE is not supported everywhere (overlay and network file
  // systems): a named probe, removed at once.
  std::string name = d + "/.weir-probe-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0)
    return std::string{std::strerror(errno)};
  ::close(fd);
  ::unlink(buf.data());
  return std::nullopt;
}

/// The problem with creating directory `dir` (or writing in it when it
/// exists): walks up to the nearest existing ancestor.
std::optional<std::string> directory_problem(const fs::path& dir, const fs::path& wanted) {
  fs::path p = dir;
  for (;;) {
    struct stat st {};
    const std::string s = p.empty() ? std::string{"."} : p.string();
    if (::stat(s.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        if (p == wanted)
          return shown(p) + " is not a directory";
        return "cannot create " + shown(wanted) + ": " + shown(p) + " is not a directory";
      }
      if (auto why = cannot_create_in(p)) {
        if (p == wanted || p == dir)
          return "directory " + shown(p) + " is not writable (" + *why + ")";
        return "cannot create " + shown(wanted) + ": directory " + shown(p) +
               " is not writable (" + *why + ")";
      }
      return std::nullopt;
    }
    const int err = errno;
    if (err != ENOENT && err != ENOTDIR)
      return "cannot access " + shown(p) + ": " + std::strerror(err);
    if (p.empty() || p == p.root_path())
      return std::nullopt; // the working directory or / is missing: left to the job
    fs::path parent = p.parent_path();
    if (parent == p)
      return std::nullopt;
    p = parent;
  }
}

} // namespace

std::optional<std::string> output_path_problem(const std::string& path, output_path_kind kind) {
  if (path.empty())
    return std::nullopt; // reported as empty by the reader
  fs::path p{path};
  // "out/" names the directory "out".
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path())
    p = p.parent_path();
  if (kind == output_path_kind::directory)
    return directory_problem(p, p);

  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return shown(p) + " is a directory";
    if (S_ISREG(st.st_mode)) {
      // Opening does not truncate or create: the job truncates it later.
      int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      if (fd < 0)
        return "cannot write " + shown(p) + ": " + std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (::access(p.c_str(), W_OK) != 0)
      return "cannot write " + shown(p) + ": " + std::strerror(errno);
    return std::nullopt;
  }
  const int err = errno;
  if (err != ENOENT && err != ENOTDIR)
    return "cannot access " + shown(p) + ": " + std::strerror(err);
  return directory_problem(p.parent_path(), p);
}

bool check_output_path(reader& r, std::string_view key, const located& value,
                       output_path_kind kind) {
  auto why = output_path_problem(value.value, kind);
  if (!why)
    return true;
  std::vector<std::string> extra;
  if (kind == output_path_kind::file && why->ends_with("is a directory"))
    extra.push_back("hint: " + r.path(key) + " names the file to write");
  r.fail(value.node ? pos_of(*value.node) : pos_of(r.table()), r.path(key) + ": " + *why,
         std::move(extra));
  return false;
}

} // namespace weir::config
