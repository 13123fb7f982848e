# A pod bundle as a Nomad task, run by podvisor through the raw_exec
# driver (README "More than one machine"). Nomad places, ships and restarts
# it; podvisor supervises the pod inside. Tested without Nomad by
# tests/reliability/nomad_contract_test.cc, which plays Nomad's part.
#
# Ship the bundle as an archive of its packed image:
#   podvisor pack examples/web-behind-proxy web.oci
#   tar -C web.oci -czf web.oci.tar.gz .     # then serve it over HTTP(S)
#
# The client must enable raw_exec, and its max_kill_timeout (default 30s)
# caps kill_timeout below, so it must be at least as large:
#   plugin "raw_exec" { config { enabled = true } }
#   client { max_kill_timeout = "30s" }
job "web" {
  datacenters = ["dc1"]
  type        = "service"

  group "web" {
    count = 1

    # podvisor restarts containers inside the pod (restartPolicy); Nomad
    # restarts the task when podvisor exits non-zero: 1 is a pod that
    # ended Failed after its restartPolicy gave up, 2 an invalid bundle and
    # 3 a host that cannot run it (podvisor(1) EXIT STATUS), neither of
    # which a retry mends, hence few attempts.
    restart {
      attempts = 3
      interval = "10m"
      delay    = "15s"
      mode     = "fail"
    }

    task "pod" {
      driver = "raw_exec"

      artifact {
        source      = "https://artifacts.example/pods/web.oci.tar.gz"
        destination = "local/web.oci"
      }

      config {
        command = "/usr/bin/podvisor"
        args = [
          "run",
          # The pod cgroup goes beside podvisor in the task's own cgroup
          # (cgroup v2): Nomad's accounting sees the containers, and its
          # kill of the task's cgroup reaches all of them.
          "--cgroup-parent=self",
          # One state directory per allocation: two allocations of this job
          # on one node must not share the pod's control socket (whose path,
          # STATE/<pod>/control.sock, must fit 108 bytes: with the 36-byte
          # allocation id, a pod name of up to 40 characters).
          "--state-dir", "/run/podvisor/${NOMAD_ALLOC_ID}",
          "--log-dir", "${NOMAD_ALLOC_DIR}/podvisor-logs",
          "--log-format", "json",
          "local/web.oci",
        ]
      }

      # Stopping: Nomad sends kill_signal to podvisor alone, which stops
      # the pod in order (preStop hooks, regular containers, then sidecars
      # in reverse order, SEMANTICS S5). It needs at most
      #     grace + 2 s + the runtime's deletes
      # where grace is the pod's terminationGracePeriodSeconds (15 s in
      # this pod) and the 2 s are S5.5's SIGKILL delay. preStop hooks run
      # inside the grace (S5.1, S5.5, as in the kubelet), so a preStop that
      # takes P seconds adds nothing here but needs grace >= P + the
      # container's own stop time. The runtime's deletes and podvisor's
      # cleanup take well under a second each on an idle node; 8 s of
      # margin covers a loaded one:
      #     kill_timeout = 15 s + 2 s + 8 s = 25 s  (<= max_kill_timeout 30 s)
      # After kill_timeout Nomad SIGKILLs every process of the task: the
      # containers die with it (they are in its cgroup), but runtime state
      # and mounts stay until the next `podvisor run` of this pod cleans
      # them up; hence the margin.
      kill_signal  = "SIGTERM"
      kill_timeout = "25s"

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
