#include "common/pod_dir.h"

#include <gtest/gtest.h>

namespace podvisor {
namespace {

// The layout docs/INTERFACE.md "State directory" promises: clients of
// other versions find a pod by these names, so a change here is an
// interface change, not a refactoring.
TEST(PodDir, NamesThePodFilesOfTheInterface) {
  PodDir pod("/run/podvisor", "web");
  EXPECT_EQ(pod.dir(), "/run/podvisor/web");
  EXPECT_EQ(pod.RecordFile(), "/run/podvisor/web/status.json");
  EXPECT_EQ(pod.EventsFile(), "/run/podvisor/web/events.jsonl");
  EXPECT_EQ(pod.ControlSocket(), "/run/podvisor/web/control.sock");
  EXPECT_EQ(pod.NetworkFile(), "/run/podvisor/web/network.json");
  EXPECT_EQ(pod.HostsFile(), "/run/podvisor/web/etc/hosts");
  EXPECT_EQ(pod.HostnameFile(), "/run/podvisor/web/etc/hostname");
  EXPECT_EQ(pod.ResolvConfFile(), "/run/podvisor/web/etc/resolv.conf");
  EXPECT_EQ(pod.VolumesDir(), "/run/podvisor/web/volumes");
  EXPECT_EQ(pod.ShmDir(), "/run/podvisor/web/shm");
  EXPECT_EQ(pod.RuntimeRoot(), "/run/podvisor/web/runtime");
  EXPECT_EQ(pod.NamespaceFile("net"), "/run/podvisor/web/ns/net");
}

TEST(PodDir, InstanceDirsAreByContainerThenRuntimeId) {
  PodDir pod("/s", "web");
  EXPECT_EQ(pod.InstanceDir("app", "web_app_2_1"), "/s/web/containers/app/web_app_2_1");
  EXPECT_EQ(pod.InstanceDir("app", "web_app_2_1") / InstanceFile::kPidFile,
            "/s/web/containers/app/web_app_2_1/init.pid");
  EXPECT_EQ(pod.InstanceDir("app", "web_app_2_1") / InstanceFile::kRuntimeLog,
            "/s/web/containers/app/web_app_2_1/runtime.log");
}

TEST(PodDir, AtTakesThePodDirectoryItself) {
  EXPECT_EQ(PodDir::At("/s/web").ControlSocket(), PodDir("/s", "web").ControlSocket());
  EXPECT_EQ(PodDir::At("/s/web").dir(), "/s/web");
}

TEST(PodDir, StateDirEntriesCannotBePodNames) {
  // Pod names are DNS labels: lower-case letters, digits and '-' only.
  for (std::string_view entry :
       {StateDirEntry::kNetworkLock, StateDirEntry::kImageCache, StateDirEntry::kBundles}) {
    EXPECT_NE(entry.find('.'), std::string_view::npos) << entry;
  }
}

}  // namespace
}  // namespace podvisor
