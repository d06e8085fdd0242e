// Reading inputs and writing outputs safely: the rules are in files.h.
#include "driver/files.h"

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace wave {

namespace {

std::string errorText(int err) { return std::strerror(err); }

std::string dirName(const std::string &path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string &path) { return path.substr(path.rfind('/') + 1); }

std::string identity(const struct stat &st) {
  return std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

// Writes all of `data` to `fd`; false with errno set on failure.
bool writeAll(int fd, const std::string &data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Writes `data` to fd and closes it; on failure, the reason ("" on success).
std::string writeAndClose(int fd, const std::string &data) {
  bool ok = writeAll(fd, data);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  return ok ? std::string() : errorText(err);
}

// How an output is written.
enum class Kind {
  Stdout,  // "-"
  Regular, // a regular file, new or existing: a temporary file renamed into place
  Through, // an existing file that is not a regular one (a device, a FIFO): opened and written
};

struct Resolved {
  Kind kind = Kind::Regular;
  std::string path; // the file written: the given path with its symlinks followed
  std::string key;  // its identity (device:inode, or the directory's and the name for a new file)
};

// Follows the symlinks of `given` to the file that will be written and classifies it; false
// with the reason when it cannot be an output.
bool resolve(const std::string &given, Resolved &r, std::string &why) {
  if (given == "-") {
    r.kind = Kind::Stdout;
    r.key = "-";
    return true;
  }
  if (given.empty()) {
    why = "the file name is empty";
    return false;
  }
  std::string path = given;
  struct stat st;
  for (int hops = 0;; ++hops) {
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) {
        why = errorText(errno);
        return false;
      }
      // A new file: its directory must exist; the file is known by the directory and its name.
      if (path.back() == '/') {
        why = "the name ends in '/': it names a directory";
        return false;
      }
      struct stat dir;
      if (::stat(dirName(path).c_str(), &dir) != 0) {
        why = errorText(errno);
        return false;
      }
      if (!S_ISDIR(dir.st_mode)) {
        why = errorText(ENOTDIR);
        return false;
      }
      r.kind = Kind::Regular;
      r.path = path;
      r.key = identity(dir) + "/" + baseName(path);
      return true;
    }
    if (!S_ISLNK(st.st_mode))
      break;
    if (hops == 40) {
      why = errorText(ELOOP);
      return false;
    }
    std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 0) + 256, '\0');
    ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    if (n < 0) {
      why = errorText(errno);
      return false;
    }
    target.resize(static_cast<size_t>(n));
    path = !target.empty() && target[0] == '/' ? target : dirName(path) + "/" + target;
  }
  if (S_ISDIR(st.st_mode)) {
    why = "it is a directory";
    return false;
  }
  r.kind = S_ISREG(st.st_mode) ? Kind::Regular : Kind::Through;
  r.path = path;
  r.key = identity(st);
  return true;
}

bool resolveAll(const std::vector<OutputFile> &outputs, const std::vector<std::string> &inputs,
                std::vector<Resolved> &resolved, OutputError &error) {
  std::vector<std::pair<std::string, std::string>> inputIds; // identity, path
  for (const auto &in : inputs) {
    struct stat st;
    if (!in.empty() && ::stat(in.c_str(), &st) == 0)
      inputIds.push_back({identity(st), in});
  }
  resolved.assign(outputs.size(), {});
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string why;
    if (!resolve(outputs[i].path, resolved[i], why)) {
      error = {outputs[i].path, why};
      return false;
    }
    for (const auto &[id, in] : inputIds)
      if (resolved[i].key == id) {
        error = {outputs[i].path, "it would overwrite the input '" + in + "'"};
        return false;
      }
    // Two outputs of the same file: refused, but for standard output and files written through
    // (`--header /dev/null --stub /dev/null` discards both).
    if (resolved[i].kind != Kind::Regular)
      continue;
    for (size_t j = 0; j < i; ++j)
      if (resolved[j].kind == Kind::Regular && resolved[j].key == resolved[i].key) {
        error = {outputs[i].path,
                 outputs[j].role == outputs[i].role
                     ? "it is written twice (" + outputs[i].role + ")"
                     : outputs[j].role + " and " + outputs[i].role + " name the same file"};
        return false;
      }
  }
  return true;
}

} // namespace

bool readInputFile(const std::string &path, std::string &text, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errorText(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    error = S_ISDIR(st.st_mode) ? "it is a directory" : errorText(errno);
    ::close(fd);
    return false;
  }
  text.clear();
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = errno == EISDIR ? "it is a directory" : errorText(errno);
      ::close(fd);
      return false;
    }
    if (n == 0)
      break;
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

bool checkOutputs(const std::vector<OutputFile> &outputs, const std::vector<std::string> &inputs,
                  OutputError &error) {
  std::vector<Resolved> resolved;
  return resolveAll(outputs, inputs, resolved, error);
}

bool writeOutputs(const std::vector<OutputFile> &outputs, const std::vector<std::string> &inputs,
                  OutputError &error) {
  std::vector<Resolved> resolved;
  if (!resolveAll(outputs, inputs, resolved, error))
    return false;
  std::vector<std::string> temps(outputs.size());
  auto fail = [&](size_t i, const std::string &why) {
    for (const auto &t : temps)
      if (!t.empty())
        ::unlink(t.c_str());
    error = {resolved[i].kind == Kind::Stdout ? "<stdout>" : outputs[i].path, why};
    return false;
  };

  // 1. Every regular file to a temporary file next to it (created exclusively, with the mode a
  // new file gets: 0666 less the umask).
  // A regular file that already holds exactly these bytes is left alone, so its time stamp
  // stays and whatever depends on it (every includer of a header) need not rebuild.
  static unsigned counter = 0;
  std::vector<bool> unchanged(outputs.size(), false);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (resolved[i].kind != Kind::Regular)
      continue;
    const std::string &path = resolved[i].path;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<uint64_t>(st.st_size) == outputs[i].data.size()) {
      std::string current, ignored;
      if (readInputFile(path, current, ignored) && current == outputs[i].data) {
        unchanged[i] = true;
        continue;
      }
    }
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
      std::string tmp = dirName(path) + "/." + baseName(path).substr(0, 200) + ".tmp" +
                        std::to_string(::getpid()) + "." + std::to_string(counter++);
      fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0)
        temps[i] = tmp;
      else if (errno != EEXIST || attempt == 100)
        return fail(i, errorText(errno));
    }
    if (std::string why = writeAndClose(fd, outputs[i].data); !why.empty())
      return fail(i, why);
  }

  // 2. Files written through, and standard output: what cannot be taken back, once every
  // temporary file is complete.
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (resolved[i].kind == Kind::Stdout) {
      const std::string &data = outputs[i].data;
      errno = 0;
      size_t n = std::fwrite(data.data(), 1, data.size(), stdout);
      int err = errno;
      std::string why;
      bool flushed = flushStdout(why);
      if (n != data.size() || !flushed) {
        if (n != data.size() && err)
          why = errorText(err);
        else if (why.empty())
          why = "write error";
        std::clearerr(stdout);
        return fail(i, why);
      }
      continue;
    }
    if (resolved[i].kind != Kind::Through)
      continue;
    int fd = ::open(resolved[i].path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
      return fail(i, errorText(errno));
    if (std::string why = writeAndClose(fd, outputs[i].data); !why.empty())
      return fail(i, why);
  }

  // 3. The renames.
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (temps[i].empty())
      continue;
    if (std::rename(temps[i].c_str(), resolved[i].path.c_str()) != 0) {
      std::string why = errorText(errno);
      bool earlier = false;
      for (size_t j = 0; j < i; ++j)
        earlier |= resolved[j].kind == Kind::Regular && !unchanged[j];
      return fail(i, earlier ? why + " (the outputs before it were already written)" : why);
    }
    temps[i].clear();
  }
  return true;
}

bool flushStdout(std::string &error) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout))
    return true;
  error = errno ? errorText(errno) : "write error";
  std::clearerr(stdout);
  return false;
}

} // namespace wave
