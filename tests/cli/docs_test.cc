// The repository's documents hold together (docs/README.md, "The docs
// check"):
//   - every rule id cited anywhere (S5.4 in a comment, S5_4_ in a test
//     name) is defined in docs/SEMANTICS.md;
//   - every relative markdown link in the top-level documents resolves, to
//     a file and, with an #anchor, to one of its headings;
//   - nothing points at design files outside the repository.
// Each offender is reported with its file and line.
//
// Files are scanned line by line with hand-written matchers, not
// std::regex: libstdc++'s regex engine recurses once per character and
// overflows the stack on long lines (minified JSON, golden files).
#include <cctype>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;

fs::path SourceRoot() {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  return root ? fs::path(root) : fs::path();
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool IsDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

std::vector<std::string> ReadLines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// A file with a NUL byte in its first 8 KiB is binary, as git decides.
bool IsText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char buf[8192];
  in.read(buf, sizeof buf);
  return std::string_view(buf, static_cast<size_t>(in.gcount())).find('\0') ==
         std::string_view::npos;
}

// The repository's files, relative to the root: git's list of tracked
// files when git can tell, else every regular file outside .git and build
// directories (a source tarball).
std::vector<fs::path> RepositoryFiles(const fs::path& root) {
  std::vector<fs::path> files;
  // Through the shell for its PATH lookup; no git (127) falls through.
  CommandResult git;
  try {
    git = RunCommand({"/bin/sh", "-c",
                      "exec git -C \"$1\" ls-files --cached --others --exclude-standard", "sh",
                      root.string()});
  } catch (const std::exception&) {
    git.exit_code = -1;
  }
  if (git.exit_code == 0 && !git.out.empty()) {
    std::istringstream in(git.out);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && fs::is_regular_file(root / line)) files.emplace_back(line);
    }
    return files;
  }
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    std::string name = it->path().filename().string();
    if (it->is_directory() && (name == ".git" || name.rfind("build", 0) == 0)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), root));
  }
  return files;
}

// ---- Rule ids ----------------------------------------------------------------

// Rule ids cited on one line: "S5" and "S5.4" as whole words, and test
// names spelling S5.4 as "S5_4_" (after a non-alphanumeric character, so
// "TEST(X, S5_4_Foo)" and "Foo_S5_4_Bar" count).
std::vector<std::string> CitedIds(std::string_view line) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != 'S') continue;
    const bool after_word = i > 0 && IsWordChar(line[i - 1]);
    const bool after_alnum = i > 0 && std::isalnum(static_cast<unsigned char>(line[i - 1])) != 0;
    size_t j = i + 1;
    while (j < line.size() && IsDigit(line[j])) ++j;
    if (j == i + 1) continue;  // no digits
    std::string major(line.substr(i + 1, j - i - 1));
    // "S5.4" or "S5": a word on its own.
    if (!after_word) {
      size_t k = j;
      std::string id = "S" + major;
      if (k + 1 < line.size() && line[k] == '.' && IsDigit(line[k + 1])) {
        size_t m = k + 1;
        while (m < line.size() && IsDigit(line[m])) ++m;
        id += "." + std::string(line.substr(k + 1, m - k - 1));
        k = m;
      }
      if (k >= line.size() || !IsWordChar(line[k])) {
        ids.push_back(id);
        i = k - 1;
        continue;
      }
    }
    // "S5_4_": a test name.
    if (!after_alnum && j + 1 < line.size() && line[j] == '_' && IsDigit(line[j + 1])) {
      size_t m = j + 1;
      while (m < line.size() && IsDigit(line[m])) ++m;
      if (m < line.size() && line[m] == '_') {
        ids.push_back("S" + major + "." + std::string(line.substr(j + 1, m - j - 1)));
        i = m;
      }
    }
  }
  return ids;
}

// The ids docs/SEMANTICS.md defines: "**S5.4**" anywhere on a line, and a
// section heading "## S5 ...".
std::set<std::string> DefinedIds(const fs::path& semantics) {
  std::set<std::string> defined;
  for (const std::string& line : ReadLines(semantics)) {
    for (size_t at = line.find("**S"); at != std::string::npos; at = line.find("**S", at + 1)) {
      size_t end = line.find("**", at + 2);
      if (end == std::string::npos) break;
      std::string inner = line.substr(at + 2, end - at - 2);
      std::vector<std::string> ids = CitedIds(inner);
      if (ids.size() == 1 && ids[0] == inner) defined.insert(inner);
    }
    if (line.rfind("## S", 0) == 0) {
      size_t space = line.find(' ', 3);
      std::string id = line.substr(3, space == std::string::npos ? std::string::npos : space - 3);
      std::vector<std::string> ids = CitedIds(id);
      if (ids.size() == 1 && ids[0] == id) defined.insert(id);
    }
  }
  return defined;
}

bool CitesRulesHere(const fs::path& rel) {
  static const std::set<std::string> kTopFiles = {"README.md", "CONTRIBUTING.md"};
  static const std::set<std::string> kDirs = {"src",   "tests",   "man",       "docs", "examples",
                                              "bench", "scripts", "packaging", "fuzz"};
  auto first = rel.begin();
  if (first == rel.end()) return false;
  if (std::next(first) == rel.end()) return kTopFiles.count(rel.string()) > 0;
  return kDirs.count(first->string()) > 0;
}

TEST(Docs, EveryCitedRuleIdIsDefinedInSemantics) {
  const fs::path root = SourceRoot();
  ASSERT_FALSE(root.empty()) << "run through meson (PODVISOR_SOURCE_ROOT)";
  const fs::path semantics = root / "docs" / "SEMANTICS.md";
  ASSERT_TRUE(fs::exists(semantics)) << semantics;
  const std::set<std::string> defined = DefinedIds(semantics);
  ASSERT_FALSE(defined.empty()) << semantics << " defines no rule ids";

  int citations = 0;
  for (const fs::path& rel : RepositoryFiles(root)) {
    if (!CitesRulesHere(rel) || !IsText(root / rel)) continue;
    std::vector<std::string> lines = ReadLines(root / rel);
    for (size_t n = 0; n < lines.size(); ++n) {
      for (const std::string& id : CitedIds(lines[n])) {
        ++citations;
        if (!defined.count(id)) {
          const std::string wanted = id.find('.') == std::string::npos
                                         ? "a heading \"## " + id + " ...\""
                                         : "a line with **" + id + "**";
          ADD_FAILURE() << rel.string() << ":" << n + 1 << ": cites rule " << id
                        << ", which docs/SEMANTICS.md does not define (it needs " << wanted << ")";
        }
      }
    }
  }
  EXPECT_GT(citations, 100) << "the scan found almost no rule ids: is it broken?";
}

// ---- Markdown links ------------------------------------------------------

// GitHub's heading anchors: lower case, punctuation other than '-' and '_'
// dropped, spaces to '-'. Bytes of non-ASCII characters are kept.
std::string Slug(std::string_view heading) {
  std::string slug;
  for (char c : heading) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80 || std::isalnum(u) || c == '-' || c == '_') {
      slug += static_cast<char>(u < 0x80 ? std::tolower(u) : u);
    } else if (c == ' ') {
      slug += '-';
    }
  }
  return slug;
}

bool IsFence(const std::string& line) {
  size_t i = line.find_first_not_of(' ');
  return i != std::string::npos &&
         (line.compare(i, 3, "```") == 0 || line.compare(i, 3, "~~~") == 0);
}

// The anchors of a markdown file's headings, with GitHub's -1, -2 ... for
// repeated ones.
std::set<std::string> Anchors(const fs::path& file) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  bool in_code = false;
  for (const std::string& line : ReadLines(file)) {
    if (IsFence(line)) in_code = !in_code;
    if (in_code || line.empty() || line[0] != '#') continue;
    size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    std::string heading = line.substr(text + 1);
    while (!heading.empty() && (heading.back() == ' ' || heading.back() == '#')) heading.pop_back();
    std::string slug = Slug(heading);
    int n = seen[slug]++;
    anchors.insert(n == 0 ? slug : slug + "-" + std::to_string(n));
  }
  return anchors;
}

// Removes `code spans`, where brackets are not links.
std::string WithoutCodeSpans(const std::string& line) {
  std::string out;
  bool in_code = false;
  for (char c : line) {
    if (c == '`') {
      in_code = !in_code;
      continue;
    }
    if (!in_code) out += c;
  }
  return out;
}

struct Link {
  size_t line = 0;
  std::string target;
};

std::vector<Link> MarkdownLinks(const fs::path& file) {
  std::vector<Link> links;
  std::vector<std::string> lines = ReadLines(file);
  bool in_code = false;
  for (size_t n = 0; n < lines.size(); ++n) {
    if (IsFence(lines[n])) in_code = !in_code;
    if (in_code) continue;
    std::string line = WithoutCodeSpans(lines[n]);
    for (size_t at = line.find("]("); at != std::string::npos; at = line.find("](", at + 2)) {
      size_t end = line.find(')', at + 2);
      if (end == std::string::npos) break;
      std::string target = line.substr(at + 2, end - at - 2);
      if (size_t title = target.find(' '); title != std::string::npos) target.resize(title);
      if (!target.empty() && target.front() == '<' && target.back() == '>') {
        target = target.substr(1, target.size() - 2);
      }
      links.push_back({n + 1, target});
    }
  }
  return links;
}

bool IsExternal(const std::string& target) {
  size_t colon = target.find(':');
  if (colon == std::string::npos) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = target[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
      return false;
  }
  return colon > 0;  // http:, https:, mailto:, ...
}

TEST(Docs, RelativeMarkdownLinksResolve) {
  const fs::path root = SourceRoot();
  ASSERT_FALSE(root.empty()) << "run through meson (PODVISOR_SOURCE_ROOT)";
  std::vector<fs::path> documents = {"README.md", "CONTRIBUTING.md", "packaging/README.md"};
  ASSERT_TRUE(fs::is_directory(root / "docs")) << root / "docs";
  for (const auto& entry : fs::directory_iterator(root / "docs")) {
    if (entry.path().extension() == ".md") documents.push_back(fs::relative(entry.path(), root));
  }
  int checked = 0;
  for (const fs::path& rel : documents) {
    const fs::path file = root / rel;
    if (!fs::exists(file)) {
      ADD_FAILURE() << rel.string() << ": missing";
      continue;
    }
    for (const Link& link : MarkdownLinks(file)) {
      if (link.target.empty() || IsExternal(link.target)) continue;
      ++checked;
      std::string path = link.target;
      std::string anchor;
      if (size_t hash = path.find('#'); hash != std::string::npos) {
        anchor = path.substr(hash + 1);
        path.resize(hash);
      }
      const fs::path target = path.empty() ? file : file.parent_path() / path;
      if (!fs::exists(target)) {
        ADD_FAILURE() << rel.string() << ":" << link.line << ": link to " << link.target
                      << ": no such file " << fs::relative(target, root).string();
        continue;
      }
      if (anchor.empty()) continue;
      if (fs::is_directory(target) || target.extension() != ".md") {
        ADD_FAILURE() << rel.string() << ":" << link.line << ": link to " << link.target
                      << ": an anchor into a file that is not markdown";
        continue;
      }
      if (!Anchors(target).count(anchor)) {
        ADD_FAILURE() << rel.string() << ":" << link.line << ": link to " << link.target << ": "
                      << fs::relative(target, root).string() << " has no heading #" << anchor;
      }
    }
  }
  EXPECT_GT(checked, 5) << "the scan found almost no links: is it broken?";
}

// ---- No design outside the repository ------------------------------------

TEST(Docs, NothingPointsAtDesignOutsideTheRepository) {
  const fs::path root = SourceRoot();
  ASSERT_FALSE(root.empty()) << "run through meson (PODVISOR_SOURCE_ROOT)";
  // Spelled in pieces so that this file does not match itself.
  const std::string sibling = std::string("..") + "/shared";
  const std::string design = std::string("shared") + "/design";
  for (const fs::path& rel : RepositoryFiles(root)) {
    if (!IsText(root / rel)) continue;
    std::vector<std::string> lines = ReadLines(root / rel);
    for (size_t n = 0; n < lines.size(); ++n) {
      for (const std::string* needle : {&sibling, &design}) {
        if (lines[n].find(*needle) != std::string::npos) {
          ADD_FAILURE() << rel.string() << ":" << n + 1 << ": mentions \"" << *needle
                        << "\"; cite docs/ (the repository's own design) instead";
        }
      }
    }
  }
}

// ---- The matchers themselves -----------------------------------------------

TEST(DocsScanner, FindsRuleIdsInProseAndTestNames) {
  using V = std::vector<std::string>;
  EXPECT_EQ(CitedIds("stop sidecars in reverse (S5.4)."), V({"S5.4"}));
  EXPECT_EQ(CitedIds("S1.1, S10.4 and S3"), V({"S1.1", "S10.4", "S3"}));
  EXPECT_EQ(CitedIds("TEST(LifecycleTermination, S5_4_SidecarsStopInReverse)"), V({"S5.4"}));
  EXPECT_EQ(CitedIds("Foo_S11_2_Bar"), V({"S11.2"}));
  EXPECT_EQ(CitedIds("SIGTERM S1x kS1 S1_Foo SS1.2 S"), V({}));
}

TEST(DocsScanner, SlugsFollowGitHub) {
  EXPECT_EQ(Slug("S5 Termination"), "s5-termination");
  EXPECT_EQ(Slug("`run` options"), "run-options");
  EXPECT_EQ(Slug("Resources, QoS, OOM scores"), "resources-qos-oom-scores");
  EXPECT_EQ(Slug("Lifecycle (pure core) / Executor"), "lifecycle-pure-core--executor");
}

}  // namespace
}  // namespace podvisor::testing
