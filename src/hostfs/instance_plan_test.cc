// PlanContainerConfig's rules, one per test: what `run`, `validate` and
// `oci-config` all get from the one plan (instance_plan.h). No I/O.
#include "hostfs/instance_plan.h"

#include <gtest/gtest.h>

namespace podvisor::hostfs {
namespace {

class InstancePlanTest : public ::testing::Test {
 protected:
  InstancePlanTest() : layout_("/state", "web") {
    pod_.metadata.name = "web";
    pod::Container c;
    c.name = "app";
    c.image = "img";
    pod_.spec.containers = {c};
    image_.rootfs = "/bundle/images/img/rootfs";
    facts_.bundle = "/bundle";
    facts_.runtime_id = InstanceRuntimeId("web", "app", 0, 7);
    facts_.instance_dir = layout_.ContainersDir() / "app" / facts_.runtime_id;
    host_.host_ips = {"192.0.2.10"};
    host_.devices = {oci::HostDevice{}};
  }

  oci::ContainerConfigInput Plan() const {
    return PlanContainerConfig(pod_, pod_.spec.containers[0], image_, layout_, facts_, host_);
  }

  pod::Pod pod_;
  PodLayout layout_;
  image::Image image_;
  InstanceFacts facts_;
  HostFacts host_;
};

TEST_F(InstancePlanTest, RuntimeIdNamesPodContainerInstanceAndAttempt) {
  EXPECT_EQ(facts_.runtime_id, "web_app_0_7");
}

TEST_F(InstancePlanTest, OwnRootIsTheInstancesOverlayElseTheImageRootfs) {
  EXPECT_EQ(Plan().root_path, "/bundle/images/img/rootfs");
  facts_.own_root = true;
  EXPECT_EQ(Plan().root_path, facts_.instance_dir / "rootfs");
}

TEST_F(InstancePlanTest, PodFilesComeFromTheLayoutAndTheTerminationLogFromTheInstance) {
  oci::ContainerConfigInput in = Plan();
  EXPECT_EQ(in.volumes_dir, "/state/web/volumes");
  EXPECT_EQ(in.etc_hosts, "/state/web/etc/hosts");
  EXPECT_EQ(in.etc_hostname, "/state/web/etc/hostname");
  EXPECT_EQ(in.etc_resolv_conf, "/state/web/etc/resolv.conf");
  EXPECT_EQ(in.termination_message_file, facts_.instance_dir / "termination-log");
}

TEST_F(InstancePlanTest, UserNamespaceBindsVolumesAndEtcFilesFromTheIdmappedMounts) {
  pod::Volume data;
  data.name = "data";
  data.empty_dir = pod::EmptyDirVolumeSource{};
  pod::Volume unused = data;
  unused.name = "unused";
  pod_.spec.volumes = {data, unused};
  pod_.spec.containers[0].volume_mounts = {{"data", "/data", false, "", "", "", ""}};
  EXPECT_TRUE(Plan().idmapped_volume_sources.empty()) << "the host's user namespace";
  facts_.user_namespace = oci::PodUserNamespaceIds{100000, 100000, 65536};
  oci::ContainerConfigInput in = Plan();
  ASSERT_TRUE(in.user_namespace);
  EXPECT_EQ(in.user_namespace->host_uid, 100000u);
  EXPECT_EQ(
      in.idmapped_volume_sources,
      (std::map<std::string, std::filesystem::path>{{"data", "/state/web/idmapped/volumes/data"}}));
  EXPECT_EQ(in.etc_hosts, "/state/web/idmapped/etc/hosts");
  EXPECT_EQ(in.etc_hostname, "/state/web/idmapped/etc/hostname");
  EXPECT_EQ(in.etc_resolv_conf, "/state/web/idmapped/etc/resolv.conf");
  EXPECT_EQ(in.volumes_dir, "/state/web/volumes");
}

TEST_F(InstancePlanTest, PodShmOnlyInThePodsOwnIpcNamespace) {
  EXPECT_TRUE(Plan().pod_shm_dir.empty()) << "the host's IPC namespace";
  facts_.namespaces.ipc = "/proc/42/ns/ipc";
  EXPECT_EQ(Plan().pod_shm_dir, "/state/web/shm");
  pod_.spec.host_ipc = true;
  EXPECT_TRUE(Plan().pod_shm_dir.empty()) << "hostIPC";
}

TEST_F(InstancePlanTest, S10_4_PodCgroupHoldsTheInstanceWithOomGroup) {
  facts_.pod_cgroup = "/podvisor/web";
  facts_.cgroup_parent = "/podvisor";
  oci::ContainerConfigInput in = Plan();
  EXPECT_EQ(in.cgroups_path, "/podvisor/web/web_app_0_7");
  EXPECT_TRUE(in.memory_oom_group);
}

TEST_F(InstancePlanTest, WithoutPodCgroupTheParentNamesPodAndInstanceElseTheRuntimeChooses) {
  facts_.cgroup_parent = "/custom";
  oci::ContainerConfigInput in = Plan();
  EXPECT_EQ(in.cgroups_path, "/custom/web/web_app_0_7");
  EXPECT_FALSE(in.memory_oom_group);
  facts_.cgroup_parent.clear();
  EXPECT_TRUE(Plan().cgroups_path.empty());
}

TEST_F(InstancePlanTest, PodIpsAreThePodNetworksElseTheHostsForHostNetwork) {
  EXPECT_TRUE(Plan().pod_ips.empty());
  pod_.spec.host_network = true;
  EXPECT_EQ(Plan().pod_ips, std::vector<std::string>{"192.0.2.10"});
  facts_.pod_ips = {"10.89.0.5"};
  EXPECT_EQ(Plan().pod_ips, std::vector<std::string>{"10.89.0.5"});
  EXPECT_EQ(Plan().host_ips, std::vector<std::string>{"192.0.2.10"});
}

TEST_F(InstancePlanTest, HostDevicesOnlyForPrivilegedContainers) {
  EXPECT_TRUE(Plan().host_devices.empty());
  pod::SecurityContext sc;
  sc.privileged = true;
  pod_.spec.containers[0].security_context = sc;
  EXPECT_EQ(Plan().host_devices.size(), 1u);
}

TEST_F(InstancePlanTest, RunFactsPassThrough) {
  facts_.pids_limit = 512;
  facts_.namespaces.network = "/proc/42/ns/net";
  facts_.sub_path_sources[1] = facts_.instance_dir / "subpaths/1";
  host_.node_memory_bytes = 3LL << 30;
  host_.node_hostname = "node-1";
  host_.available_capabilities = std::vector<std::string>{"CAP_CHOWN"};
  oci::ContainerConfigInput in = Plan();
  EXPECT_EQ(in.pids_limit, 512);
  EXPECT_EQ(in.namespaces.network, "/proc/42/ns/net");
  EXPECT_EQ(in.sub_path_sources.at(1), facts_.instance_dir / "subpaths/1");
  EXPECT_EQ(in.node_memory_bytes, 3LL << 30);
  EXPECT_EQ(in.node_hostname, "node-1");
  EXPECT_EQ(in.available_capabilities, std::vector<std::string>{"CAP_CHOWN"});
  EXPECT_EQ(in.bundle, "/bundle");
}

}  // namespace
}  // namespace podvisor::hostfs
