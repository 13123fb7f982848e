// Tests for ParseManifestFile (manifest_file.cc): finding pod.yaml or
// pod.json in a bundle directory, manifests named directly, and the errors
// for unreadable, oversized or malformed files, each naming the path.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/parse.h"
#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::HasSubstr;
using ::testing::StartsWith;

void WriteFile(const std::filesystem::path& path, std::string_view content) {
  std::ofstream out(path);
  out << content;
}

// A fresh directory under the system temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "parse_test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// ---------------------------------------------------------------------------
// Files and bundles

constexpr std::string_view kMinimalYaml =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: from-yaml}\nspec: {containers: [{name: c}]}\n";
constexpr std::string_view kMinimalJson =
    R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "from-json"},
        "spec": {"containers": [{"name": "c"}]}})";

TEST(ParseManifestFile, BundleWithPodYaml) {
  TempDir dir;
  WriteFile(dir.path() / "pod.yaml", kMinimalYaml);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pod.metadata.name, "from-yaml");
}

TEST(ParseManifestFile, BundleWithPodJson) {
  TempDir dir;
  WriteFile(dir.path() / "pod.json", kMinimalJson);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pod.metadata.name, "from-json");
}

TEST(ParseManifestFile, BundleWithBothIsAnErrorNamingBoth) {
  TempDir dir;
  WriteFile(dir.path() / "pod.yaml", kMinimalYaml);
  WriteFile(dir.path() / "pod.json", kMinimalJson);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr((dir.path() / "pod.yaml").string()));
  EXPECT_THAT(r.error().message(), HasSubstr((dir.path() / "pod.json").string()));
}

TEST(ParseManifestFile, BundleWithNeitherIsAnErrorNamingTheDirectory) {
  TempDir dir;
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "no pod.yaml or pod.json in bundle " + dir.path().string());
  EXPECT_EQ(r.error().code(), ENOENT);
}

TEST(ParseManifestFile, ManifestPathGivenDirectly) {
  Result<ParseOutput> r = ParseManifestFile(TestData("every-field.json"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pod.metadata.name, "every-field");
}

TEST(ParseManifestFile, UnknownExtensionTriesJsonThenYaml) {
  TempDir dir;
  WriteFile(dir.path() / "manifest", kMinimalYaml);
  WriteFile(dir.path() / "other.txt", kMinimalJson);
  EXPECT_EQ(ParseManifestFile(dir.path() / "manifest")->pod.metadata.name, "from-yaml");
  EXPECT_EQ(ParseManifestFile(dir.path() / "other.txt")->pod.metadata.name, "from-json");
}

TEST(ParseManifestFile, UnreadableManifestNamesThePathAndErrno) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "pod.yaml");  // read() gives EISDIR
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EISDIR);
  EXPECT_THAT(r.error().message(), HasSubstr((dir.path() / "pod.yaml").string()));

  TempDir dangling;
  std::filesystem::create_symlink(dangling.path() / "nowhere.json", dangling.path() / "pod.json");
  Result<ParseOutput> d = ParseManifestFile(dangling.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ENOENT);
  EXPECT_THAT(d.error().message(),
              StartsWith("opening " + (dangling.path() / "pod.json").string()));
}

TEST(ParseManifestFile, LargerThan4MiBIsRefused) {
  TempDir dir;
  std::string big(kMinimalYaml);
  big += "# " + std::string(kMaxManifestBytes, 'x') + "\n";
  WriteFile(dir.path() / "pod.yaml", big);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("larger than 4 MiB"));
}

TEST(ParseManifestFile, SyntaxErrorsNameTheFileAndLine) {
  TempDir dir;
  WriteFile(dir.path() / "pod.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n");
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), StartsWith((dir.path() / "pod.yaml").string() + ": line "));
}

}  // namespace
}  // namespace podvisor::pod
