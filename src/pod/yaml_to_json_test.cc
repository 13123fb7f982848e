// Tests for the first step of reading a manifest (yaml_to_json.cc): YAML
// scalars typed by the YAML 1.2 core schema, syntax errors with their line
// and column, and the guards against hostile input (nesting depth, alias
// expansion, invalid UTF-8). ParseJsonText shares those guards for JSON.
#include <cmath>
#include <cstdint>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pod/parse.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

json Yaml(std::string_view text) {
  Result<json> r = YamlToJson(text);
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return nullptr;
  }
  return *r;
}

std::string YamlError(std::string_view text) {
  Result<json> r = YamlToJson(text);
  if (r) {
    ADD_FAILURE() << "expected an error for:\n" << text << "\ngot " << r->dump();
    return {};
  }
  return r.error().message();
}

// ---------------------------------------------------------------------------
// YAML to JSON

TEST(YamlToJson, PlainScalarsFollowTheYaml12CoreSchema) {
  json doc = Yaml(R"(
nulls: [~, null, Null, NULL, ]
empty:
bools: [true, True, TRUE, false, False, FALSE]
ints: [0, -17, +42, 012, 0x1F, 0o17, 0400, 0644, 019]
floats: [1.5, -0.25, .5, 1., 1e3, 2.5E-1]
yaml11_words: [yes, no, on, off, y, n]
not_numbers: [0x, 0o8, 1_000, 1.2.3, "0x1F", 12abc]
)");
  EXPECT_EQ(doc["nulls"], json::parse("[null, null, null, null]"));
  EXPECT_TRUE(doc["empty"].is_null());
  EXPECT_EQ(doc["bools"], json::parse("[true, true, true, false, false, false]"));
  // A leading 0 is octal, as kubectl reads file modes (0400 == 256).
  EXPECT_EQ(doc["ints"], json::parse("[0, -17, 42, 10, 31, 15, 256, 420, 19]"));
  for (const json& v : doc["ints"]) EXPECT_TRUE(v.is_number_integer()) << v;
  EXPECT_EQ(doc["floats"], json::parse("[1.5, -0.25, 0.5, 1.0, 1000.0, 0.25]"));
  for (const json& v : doc["floats"]) EXPECT_TRUE(v.is_number_float()) << v;
  EXPECT_EQ(doc["yaml11_words"], json::parse(R"(["yes", "no", "on", "off", "y", "n"])"));
  EXPECT_EQ(doc["not_numbers"], json::parse(R"(["0x", "0o8", "1_000", "1.2.3", "0x1F", "12abc"])"));
}

TEST(YamlToJson, InfinityAndNanAreFloats) {
  json doc = Yaml("a: [.inf, -.Inf, +.INF, .nan, .NaN]\n");
  ASSERT_EQ(doc["a"].size(), 5u);
  EXPECT_TRUE(std::isinf(doc["a"][0].get<double>()) && doc["a"][0].get<double>() > 0);
  EXPECT_TRUE(std::isinf(doc["a"][1].get<double>()) && doc["a"][1].get<double>() < 0);
  EXPECT_TRUE(std::isinf(doc["a"][2].get<double>()));
  EXPECT_TRUE(std::isnan(doc["a"][3].get<double>()));
  EXPECT_TRUE(std::isnan(doc["a"][4].get<double>()));
}

TEST(YamlToJson, QuotedAndBlockScalarsStayStrings) {
  json doc = Yaml(R"(
double: "123"
single: 'true'
null_word: "null"
literal: |
  42
folded: >
  3.5
tagged: !!str 99
)");
  EXPECT_EQ(doc["double"], "123");
  EXPECT_EQ(doc["single"], "true");
  EXPECT_EQ(doc["null_word"], "null");
  EXPECT_EQ(doc["literal"], "42\n");
  EXPECT_EQ(doc["folded"], "3.5\n");
  EXPECT_EQ(doc["tagged"], "99");
}

TEST(YamlToJson, IntegersBeyond64BitsBecomeFloatsNotWrapped) {
  json doc = Yaml(
      "a: 9223372036854775807\nb: 18446744073709551615\nc: 99999999999999999999\n"
      "d: -9223372036854775808\n");
  EXPECT_EQ(doc["a"].get<int64_t>(), INT64_MAX);
  EXPECT_TRUE(doc["b"].is_number_unsigned());
  EXPECT_EQ(doc["b"].get<uint64_t>(), UINT64_MAX);
  EXPECT_TRUE(doc["c"].is_number_float());
  EXPECT_EQ(doc["d"].get<int64_t>(), INT64_MIN);
}

TEST(YamlToJson, AliasesAndMergeKeysResolve) {
  json doc = Yaml(R"(
base: &base {cpu: 100m, memory: 64Mi}
copy: *base
merged:
  <<: *base
  memory: 128Mi
merged_list:
  <<: [{a: 1}, {a: 2, b: 2}]
)");
  EXPECT_EQ(doc["copy"], json::parse(R"({"cpu": "100m", "memory": "64Mi"})"));
  EXPECT_EQ(doc["merged"], json::parse(R"({"cpu": "100m", "memory": "128Mi"})"));
  EXPECT_EQ(doc["merged_list"], json::parse(R"({"a": 1, "b": 2})"));
}

TEST(YamlToJson, EmptyDocumentIsAnError) {
  EXPECT_EQ(YamlError(""), "manifest is empty");
  EXPECT_EQ(YamlError("---\n"), "manifest is empty");
  EXPECT_EQ(YamlError("# only a comment\n"), "manifest is empty");
  EXPECT_EQ(YamlError("~\n"), "manifest is empty");
}

TEST(YamlToJson, SeveralDocumentsAreAnErrorWhereOneIsExpected) {
  EXPECT_EQ(YamlError("a: 1\n---\nb: 2\n"),
            "the text holds 2 YAML documents where one was expected");
  auto docs = YamlToJsonDocuments("a: 1\n---\n---\nb: 2\n");
  ASSERT_TRUE(docs) << docs.error().message();
  EXPECT_EQ(*docs, (std::vector<json>{json::parse(R"({"a": 1})"), json::parse(R"({"b": 2})")}));
  // Separators around a single document are common and fine.
  EXPECT_EQ(Yaml("---\na: 1\n---\n"), json::parse(R"({"a": 1})"));
}

TEST(YamlToJson, ATabInTheIndentationIsNamed) {
  std::string err = YamlError("spec:\n  containers:\n\t- name: a\n");
  EXPECT_THAT(err, StartsWith("line 3: a tab in the indentation; YAML indents with spaces only"))
      << err;
  // A tab inside a block scalar is content, not indentation.
  EXPECT_EQ(Yaml("a: |\n  x\n  \ty\nb: 1\n"), json::parse(R"({"a": "x\n\ty\n", "b": 1})"));
}

TEST(YamlToJson, SyntaxErrorNamesLineAndColumn) {
  EXPECT_THAT(YamlError("a: 1\nb: [1, 2\nc: 3\n"), StartsWith("line "));
  EXPECT_THAT(YamlError("a: 1\n  b: 2\n"), StartsWith("line 2, column "));
  EXPECT_THAT(YamlError("a: b: c\n"), StartsWith("line 1, column "));
}

// yaml-cpp 0.7's LoadAll loops forever on these (yaml-cpp issue #1040).
TEST(YamlToJson, StreamStartingWithACommaIsAnErrorNotAHang) {
  EXPECT_EQ(YamlError(","), "line 1, column 1: unexpected \",\"");
  EXPECT_EQ(YamlError("\n,'x'\n"), "line 2, column 1: unexpected \",\"");
  EXPECT_THAT(YamlError("a: b\n---\n, \"\"\n"), HasSubstr("unexpected \",\""));
}

TEST(YamlToJson, SyntaxErrorsWinOverLaterBuildProblems) {
  // An unclosed "{" makes the next lines look like a complex key; the
  // parser's own error names the real cause.
  EXPECT_EQ(YamlError("spec:\n  containers:\n    - {name: c, image: x\n    - name: d\n"),
            "line 4, column 11: end of map flow not found");
}

TEST(YamlToJson, EscapesYamlCppDecodesToLatin1AreRejected) {
  EXPECT_EQ(YamlError("a: \"x\\_y\"\n"),
            "line 1, column 4: the escapes \\_ and \\N are not supported; write the character");
  EXPECT_EQ(Yaml("a: \"\\u00e9\\U0001F600\\t\"\n")["a"], "\xc3\xa9\xf0\x9f\x98\x80\t");
}

TEST(YamlToJson, DuplicateKeysAreAnError) {
  EXPECT_EQ(YamlError("a: 1\nb: 2\na: 3\n"), "line 3, column 1: duplicate key \"a\"");
}

TEST(YamlToJson, NonScalarKeysAreAnError) {
  EXPECT_THAT(YamlError("? [1, 2]\n: x\n"), HasSubstr("mapping keys must be scalars"));
}

TEST(YamlToJson, InvalidUtf8IsAnError) {
  EXPECT_EQ(YamlError("a: ok\nb: \xff\xfe\n"), "line 2, column 4: invalid UTF-8");
  EXPECT_EQ(YamlError("a: \xc0\xaf\n"), "line 1, column 4: invalid UTF-8");  // overlong "/"
  EXPECT_EQ(Yaml("a: \xc3\xa9t\xc3\xa9\n")["a"], "\xc3\xa9t\xc3\xa9");
}

std::string NestedFlow(int depth) {
  return "a: " + std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']') + "\n";
}

TEST(YamlToJson, NestingUpToTheLimitIsAccepted) {
  // The root mapping is one level.
  EXPECT_TRUE(YamlToJson(NestedFlow(kMaxManifestDepth - 1)).ok());
}

TEST(YamlToJson, DeepNestingIsRejectedCleanly) {
  EXPECT_THAT(YamlError(NestedFlow(kMaxManifestDepth)), HasSubstr("nesting deeper than 64 levels"));
  // Far past the limit: yaml-cpp's own recursion guard must answer first.
  EXPECT_THAT(YamlError(NestedFlow(100000)), StartsWith("line 1, column "));
  std::string block;
  for (int i = 0; i < 100; ++i) block += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  EXPECT_THAT(YamlError(block), HasSubstr("nesting deeper than 64 levels"));
}

TEST(YamlToJson, AliasExpansionIsBounded) {
  // "Billion laughs": nine levels of ten aliases each.
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  EXPECT_THAT(YamlError(text), HasSubstr("expands to too many values"));
}

TEST(YamlToJson, SelfReferentialAliasDoesNotLoop) {
  Result<json> r = YamlToJson("a: &a [1, *a]\n");
  if (!r) SUCCEED() << r.error().message();  // either answer is fine, as long as it ends
}

// ---------------------------------------------------------------------------
// JSON text

TEST(ParseJsonText, SyntaxErrorNamesLineAndColumn) {
  Result<json> r = ParseJsonText("{\n  \"a\": 1,\n  \"b\": ]\n}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), StartsWith("line 3, column 8: syntax error"));
}

TEST(ParseJsonText, DuplicateKeysAreAnError) {
  Result<json> r = ParseJsonText(R"({"a": {"x": 1, "y": 2}, "b": {"x": 1, "x": 2}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "duplicate key \"x\"");
}

TEST(ParseJsonText, DeepNestingIsRejected) {
  auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']');
  };
  EXPECT_TRUE(ParseJsonText(nested(kMaxManifestDepth)).ok());
  Result<json> r = ParseJsonText(nested(1000000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "nesting deeper than 64 levels");
}

}  // namespace
}  // namespace podvisor::pod
