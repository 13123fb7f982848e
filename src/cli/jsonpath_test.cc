// kubectl's JSONPath subset, checked against the examples of kubectl's
// own documentation (kubernetes.io/docs/reference/kubectl/jsonpath/), on
// the input given there. One deliberate difference from that page's table:
// maps print as JSON ({"cpu":"4"}), as kubectl has printed them since the
// page was written, not as Go's map[cpu:4].
#include "cli/jsonpath.h"

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

const nlohmann::json& Input() {
  static const nlohmann::json input = nlohmann::json::parse(R"({
    "kind": "List",
    "items":[
      {
        "kind":"None",
        "metadata":{
          "name":"127.0.0.1",
          "labels":{ "kubernetes.io/hostname":"127.0.0.1" }
        },
        "status":{
          "capacity":{"cpu":"4"},
          "addresses":[{"type": "LegacyHostIP", "address":"127.0.0.1"}]
        }
      },
      {
        "kind":"None",
        "metadata":{"name":"127.0.0.2"},
        "status":{
          "capacity":{"cpu":"8"},
          "addresses":[
            {"type": "LegacyHostIP", "address":"127.0.0.2"},
            {"type": "another", "address":"127.0.0.3"}
          ]
        }
      }
    ],
    "users":[
      { "name": "myself", "user": {} },
      { "name": "e2e", "user": {"username": "admin", "password": "secret"} }
    ]
  })");
  return input;
}

std::string Eval(const std::string& templ) {
  auto r = EvaluateJsonPath(templ, Input());
  if (!r) return "ERROR: " + r.error().message();
  return *r;
}

TEST(JsonPath, KubectlDocumentedExamples) {
  EXPECT_EQ(Eval("kind is {.kind}"), "kind is List");
  EXPECT_EQ(Eval("{@}"), Input().dump());
  EXPECT_EQ(Eval("{.kind}"), "List");
  EXPECT_EQ(Eval("{['kind']}"), "List");
  EXPECT_EQ(Eval("{..name}"), "127.0.0.1 127.0.0.2 myself e2e");
  EXPECT_EQ(Eval("{.items[*].metadata.name}"), "127.0.0.1 127.0.0.2");
  EXPECT_EQ(Eval("{.users[0].name}"), "myself");
  EXPECT_EQ(Eval("{.items[*]['metadata.name', 'status.capacity']}"),
            R"(127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"})");
  EXPECT_EQ(Eval(R"({.users[?(@.name=="e2e")].user.password})"), "secret");
  EXPECT_EQ(Eval("{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}"),
            R"([127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] )");
  EXPECT_EQ(Eval(R"({range .items[*]}{.metadata.name}{"\t"}{end})"), "127.0.0.1\t127.0.0.2\t");
  EXPECT_EQ(Eval(R"({.items[0].metadata.labels.kubernetes\.io/hostname})"), "127.0.0.1");
  EXPECT_EQ(Eval(R"({.items[0].metadata.labels['kubernetes\.io/hostname']})"), "127.0.0.1");
}

TEST(JsonPath, KubectlCheatSheetForms) {
  // The forms of kubectl's cheat sheet and `kubectl get -o jsonpath` help.
  EXPECT_EQ(Eval("{$.kind}"), "List");
  EXPECT_EQ(Eval("{.users[-1:].name}"), "e2e");
  EXPECT_EQ(Eval("{.users[0:1].name}"), "myself");
  EXPECT_EQ(Eval("{.items[-1].metadata.name}"), "127.0.0.2");
  EXPECT_EQ(Eval("{.items[0,1].kind}"), "None None");
  EXPECT_EQ(Eval("{.items[*].status.addresses[?(@.type==\"another\")].address}"), "127.0.0.3");
  EXPECT_EQ(Eval("{.users[?(@.user.password)].name}"), "e2e");
  EXPECT_EQ(Eval("{.users[?(@.name!='e2e')].name}"), "myself");
  EXPECT_EQ(Eval("{range .items[*]}{.metadata.name}{\"\\n\"}{end}"), "127.0.0.1\n127.0.0.2\n");
  EXPECT_EQ(Eval("{range .users[*]}{range .user.*}<{@}>{end}{end}"), "<secret><admin>");
  EXPECT_EQ(Eval("{.items[*].kind}{\"\\n\"}"), "None None\n");
  // A missing member prints nothing, as kubectl's default
  // --allow-missing-template-keys=true does.
  EXPECT_EQ(Eval("{.nothing.here}"), "");
}

TEST(JsonPath, NumbersCompareAsNumbers) {
  nlohmann::json pods = nlohmann::json::parse(
      R"({"containers":[{"name":"a","restartCount":2},{"name":"b","restartCount":10}]})");
  auto r = EvaluateJsonPath("{.containers[?(@.restartCount > 3)].name}", pods);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "b");
}

TEST(JsonPath, BadTemplatesAreErrorsNamingTheProblem) {
  EXPECT_NE(Eval("{.kind").find("unclosed"), std::string::npos) << Eval("{.kind");
  EXPECT_NE(Eval("{range .items[*]}x").find("{range} without {end}"), std::string::npos);
  EXPECT_NE(Eval("{end}").find("{end} without {range}"), std::string::npos);
  EXPECT_NE(Eval("{.items[?(@.a ~ 1)]}").find("ERROR"), std::string::npos);
  EXPECT_NE(Eval("{.items[x]}").find("expected an index"), std::string::npos);
}

}  // namespace
}  // namespace podvisor::cli
