// instance_table.h: records by runtime id, the current one per
// (container, instance), creation order and S14.12's retirement choice.
#include "supervisor/executor/instance_table.h"

#include <gtest/gtest.h>

#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {
namespace {

std::unique_ptr<ContainerInstance> Record(std::string container, int instance, std::string id) {
  auto r = std::make_unique<ContainerInstance>();
  r->container = std::move(container);
  r->instance = instance;
  r->id = std::move(id);
  return r;
}

bool Ended(const ContainerInstance& inst) {
  return inst.state.Deleted();
}

void MarkEnded(ContainerInstance* inst) {
  inst->state.step = InstanceStep::kDeleted;
}

TEST(InstanceTable, AddNumbersRecordsInCreationOrderAndMakesThemCurrent) {
  InstanceTable table;
  ContainerInstance& a = table.Add(Record("app", 0, "app-0-a"));
  ContainerInstance& b = table.Add(Record("web", 0, "web-0-a"));
  EXPECT_LT(a.seq, b.seq);
  EXPECT_EQ(table.Find("app", 0), &a);
  EXPECT_EQ(table.Find("web", 0), &b);
  EXPECT_EQ(table.FindById("web-0-a"), &b);
  EXPECT_EQ(table.Find("app", 1), nullptr);
  EXPECT_EQ(table.FindById("nope"), nullptr);
}

TEST(InstanceTable, RetriedCreateBecomesCurrentWhileTheFailedRecordStaysById) {
  InstanceTable table;
  ContainerInstance& failed = table.Add(Record("app", 0, "app-0-a"));
  ContainerInstance& retry = table.Add(Record("app", 0, "app-0-b"));
  EXPECT_EQ(table.Find("app", 0), &retry);
  EXPECT_EQ(table.FindById("app-0-a"), &failed);
  EXPECT_EQ(table.size(), 2u);
}

TEST(InstanceTable, EraseDropsTheCurrentEntryOnlyWhenItNamesTheErasedRecord) {
  InstanceTable table;
  table.Add(Record("app", 0, "app-0-a"));
  ContainerInstance& retry = table.Add(Record("app", 0, "app-0-b"));
  table.Erase(*table.FindById("app-0-a"));
  EXPECT_EQ(table.Find("app", 0), &retry);
  table.Erase(retry);
  EXPECT_EQ(table.Find("app", 0), nullptr);
  EXPECT_EQ(table.size(), 0u);
}

TEST(InstanceTable, RetiresEndedRecordsButTheNewestEndedAndTheCurrent) {
  InstanceTable table;
  for (int i = 0; i < 4; ++i) table.Add(Record("app", i, "app-" + std::to_string(i)));
  table.Add(Record("web", 0, "web-0"));
  for (const char* id : {"app-0", "app-1", "app-2", "app-3", "web-0"}) {
    MarkEnded(table.FindById(id));
  }
  // app-3 is current: kept; app-2 is the newest ended: kept.
  auto retire = table.EndedToRetire("app", 3, Ended);
  ASSERT_EQ(retire.size(), 2u);
  EXPECT_EQ(retire[0]->id, "app-1");  // newest first
  EXPECT_EQ(retire[1]->id, "app-0");
  EXPECT_TRUE(table.EndedToRetire("web", 1, Ended).empty());  // only one ended
}

TEST(InstanceTable, DoesNotRetireARecordStillWaitedFor) {
  InstanceTable table;
  for (int i = 0; i < 3; ++i) table.Add(Record("app", i, "app-" + std::to_string(i)));
  MarkEnded(table.FindById("app-1"));  // app-0 still deleting, app-2 current
  EXPECT_TRUE(table.EndedToRetire("app", 2, Ended).empty());
}

TEST(InstanceTable, ClearForgetsEveryRecord) {
  InstanceTable table;
  table.Add(Record("app", 0, "app-0"));
  table.Clear();
  EXPECT_EQ(table.Find("app", 0), nullptr);
  EXPECT_EQ(table.begin(), table.end());
}

}  // namespace
}  // namespace podvisor::supervisor::executor
