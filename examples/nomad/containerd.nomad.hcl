# The same pod through Nomad's containerd task driver
# (github.com/Roblox/nomad-driver-containerd) and podvisor's containerd
# shim (README "More than one machine"): the image is the bundle image
# `podvisor pack` wrote, pushed to a registry, e.g.
#   podvisor pack examples/web-behind-proxy web.oci
#   skopeo copy oci:web.oci docker://registry.example/pods/web:1.0
# containerd pulls and unpacks it; the shim sees a bundle directory in the
# mounted rootfs (its label io.podvisor.bundle=1 says so) and runs
# `podvisor run --cgroup-parent=self` on it in the task's cgroup.
#
# The driver picks the containerd runtime for every task of the client, so
# run this job on nodes set up for it (node class "podvisor"):
#   plugin "containerd-driver" {
#     config {
#       enabled            = true
#       containerd_runtime = "io.containerd.podvisor.v1"
#     }
#   }
#   client {
#     node_class       = "podvisor"
#     max_kill_timeout = "30s"
#   }
job "web-containerd" {
  datacenters = ["dc1"]
  type        = "service"

  constraint {
    attribute = "${node.class}"
    value     = "podvisor"
  }

  group "web" {
    task "pod" {
      driver = "containerd-driver"

      config {
        image = "registry.example/pods/web:1.0"
      }

      # The shim passes SIGTERM to podvisor, which stops the pod in order;
      # the arithmetic is raw-exec.nomad.hcl's: grace 15 s + 2 s + 8 s = 25 s.
      kill_signal  = "SIGTERM"
      kill_timeout = "25s"

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
