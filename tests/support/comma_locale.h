// A host program's locale with a decimal comma (de_DE.UTF-8), for the tests that check every
// writer gives the same bytes under it as under "C": the locale from the system, or compiled by
// the test suite with localedef; HostLocale does what a program's start-up does and undoes it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif
#include <gtest/gtest.h>
#include <locale.h>
#include <stdlib.h>

#include <clocale>
#include <cstdlib>
#include <fstream>
#include <locale>
#include <memory>
#include <sstream>
#include <string>

#include "test_support.h"

namespace ptprof::test {

constexpr const char* kLocale = "de_DE.UTF-8";

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

#if defined(__SANITIZE_ADDRESS__)
struct LeakCheckOff {
  LeakCheckOff() { __lsan_disable(); }
  ~LeakCheckOff() { __lsan_enable(); }
};
#else
struct LeakCheckOff {};
#endif

// What a host program does at start-up, undone at the end of the test.
class HostLocale {
 public:
  HostLocale() {
    ::setenv("LC_ALL", kLocale, 1);
    {
      // glibc keeps (and LeakSanitizer reports) a few bytes of a locale loaded from LOCPATH
      // for the life of the process: its own, not ptprof's.
      LeakCheckOff off;
      ok_ = std::setlocale(LC_ALL, "") != nullptr;
      if (ok_) std::locale::global(std::locale(""));
    }
  }
  ~HostLocale() {
    ::unsetenv("LC_ALL");
    std::locale::global(std::locale::classic());
    std::setlocale(LC_ALL, "C");
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

class CommaLocale : public ::testing::Test {
 protected:
  // de_DE.UTF-8 from the system when it has it, else compiled by this test with localedef
  // (glibc's libc-bin; the sources come with Debian's locales package, which scripts/setup
  // installs) into a directory that LOCPATH names.
  static void SetUpTestSuite() {
    if (locale_t l = ::newlocale(LC_ALL_MASK, kLocale, nullptr)) {
      ::freelocale(l);
      return;
    }
    dir_ = std::make_unique<test::TempDir>();
    const std::string cmd = "localedef -i de_DE -f UTF-8 " + dir_->path() + "/" + kLocale + " >" +
                            dir_->path() + "/localedef.log 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      error_ = cmd + " failed: " + read_file(dir_->path() + "/localedef.log");
      return;
    }
    ::setenv("LOCPATH", dir_->path().c_str(), 1);
  }
  static void TearDownTestSuite() {
    ::unsetenv("LOCPATH");
    dir_.reset();
  }
  void SetUp() override { ASSERT_EQ(error_, "") << "no " << kLocale << " locale to test under"; }

  static inline std::unique_ptr<test::TempDir> dir_;
  static inline std::string error_;
};

}  // namespace ptprof::test
