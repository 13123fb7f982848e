"""Loads podvisor's `status -o json` documents with the official Kubernetes
Python client, the way it loads an API server's reply: ApiClient.deserialize
into V1Pod, whose client-side validation refuses a document without the
fields the API marks required. Prints, per file, what the test checks."""
import json
import sys

from kubernetes import client


class Response:  # what ApiClient.deserialize reads: the body in .data
    def __init__(self, data):
        self.data = data


api = client.ApiClient()
for path in sys.argv[1:]:
    with open(path) as f:
        pod = api.deserialize(Response(f.read()), "V1Pod")
    statuses = (pod.status.init_container_statuses or []) + (pod.status.container_statuses or [])
    c0 = pod.spec.containers[0]
    print(json.dumps({
        "name": pod.metadata.name,
        "phase": pod.status.phase,
        "startTime": pod.status.start_time is not None,
        "dnsPolicy": pod.spec.dns_policy,
        "schedulerName": pod.spec.scheduler_name,
        "securityContext": pod.spec.security_context is not None,
        "enableServiceLinks": pod.spec.enable_service_links,
        "priority": pod.spec.priority,
        "nodeName": pod.spec.node_name,
        "imagePullPolicy": c0.image_pull_policy,
        "terminationMessagePath": c0.termination_message_path,
        "terminationMessagePolicy": c0.termination_message_policy,
        "imageIDs": [s.image_id for s in statuses],
        "containerIDs": [s.container_id for s in statuses],
        "generation": pod.metadata.generation,
        "hostIP": pod.status.host_ip,
        "podIP": pod.status.pod_ip,
    }))
