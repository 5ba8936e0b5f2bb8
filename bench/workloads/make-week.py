#!/usr/bin/env python3
"""The inputs of the workload benchmarks of issue 18 (bench/workloads/README.md), written to DIR.

week DIR [SCALE]: a trace of 100,000 single-pod Jobs (1-8 GPUs each from a claim template,
running 1 minute to 10 hours) arriving over a simulated week, for `allot gen --nodes 2000`
clusters;
deployments DIR [SCALE]: 5,000 Deployments of 10 replicas and a Timeline that rolls each once,
for `allot gen --nodes 5000` clusters.
SCALE (default 1) multiplies the number of Jobs or Deployments (0.1: a tenth; give the cluster a
tenth of the nodes too, so the load per node stays the same).
Deterministic (a fixed seed)."""
import json
import os
import random
import sys

DURATIONS = ["1m", "5m", "15m", "30m", "1h", "2h", "3h", "4h", "6h", "8h", "10h"]


def week(out, scale=1.0):
    rng = random.Random(18)
    os.makedirs(os.path.join(out, "jobs"), exist_ok=True)
    docs = []
    for gpus in range(1, 9):
        docs.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"gpus-{gpus}", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
                "count": gpus}}]}}},
        })
    with open(os.path.join(out, "templates.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": docs}, f)
    for gpus in range(1, 9):
        for d in DURATIONS:
            job = {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "job", "namespace": "default"},
                "spec": {"backoffLimit": 0, "template": {
                    "metadata": {"annotations": {"allot.dev/run-duration": d}},
                    "spec": {"restartPolicy": "Never", "containers": [{
                        "name": "train", "image": "registry.example.com/train:1",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                      "claims": [{"name": "gpu"}]}}],
                        "resourceClaims": [{"name": "gpu",
                                            "resourceClaimTemplateName": f"gpus-{gpus}"}]}}},
            }
            with open(os.path.join(out, "jobs", f"{gpus}-{d}.json"), "w") as f:
                json.dump(job, f)
    # Run on past the last arrival until the longest job (10h) has finished.
    with open(os.path.join(out, "options.json"), "w") as f:
        json.dump({"apiVersion": "allot.dev/v1alpha1", "kind": "SimulationOptions",
                   "metadata": {"name": "week"}, "horizon": "11h"}, f)
    week_s = 7 * 24 * 3600
    jobs = round(100_000 * scale)
    times = sorted(rng.uniform(0, week_s) for _ in range(jobs))
    with open(os.path.join(out, "trace.csv"), "w") as f:
        f.write("time,manifest,name\n")
        for i, t in enumerate(times):
            gpus = rng.choice([1, 1, 1, 2, 2, 4, 4, 8])
            d = rng.choice(DURATIONS)
            f.write(f"{t:.0f},jobs/{gpus}-{d}.json,job-{i:06d}\n")


def deployments(out, scale=1.0):
    os.makedirs(out, exist_ok=True)
    count = round(5000 * scale)

    def deployment(i, image):
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": f"web-{i:05d}", "namespace": "default"},
            "spec": {"replicas": 10, "selector": {"matchLabels": {"app": f"web-{i:05d}"}},
                     "template": {"metadata": {"labels": {"app": f"web-{i:05d}"}},
                                  "spec": {"containers": [{
                                      "name": "web", "image": image,
                                      "resources": {"requests": {"cpu": "100m",
                                                                 "memory": "64Mi"}}}]}}},
        }

    with open(os.path.join(out, "deployments.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List",
                   "items": [deployment(i, "registry.example.com/web:1") for i in range(count)]}, f)
    timeline = {"apiVersion": "allot.dev/v1alpha1", "kind": "Timeline",
                "metadata": {"name": "roll"},
                "events": [{"at": "10m", "update": [deployment(i, "registry.example.com/web:2")
                                                   for i in range(count)]}]}
    with open(os.path.join(out, "roll.json"), "w") as f:
        json.dump(timeline, f)


if __name__ == "__main__":
    scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    {"week": week, "deployments": deployments}[sys.argv[1]](sys.argv[2], scale)
