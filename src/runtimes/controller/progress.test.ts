import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import { observe } from "./progress.js";

const pod = (status: V1Pod["status"], extra: Partial<V1Pod> = {}): V1Pod => ({
  metadata: { name: "rt-abc", creationTimestamp: new Date("2026-01-01T00:00:00Z") },
  spec: { containers: [{ name: "app" }], ...(extra.spec ?? {}) },
  status,
});
const claim = (phase: string): V1PersistentVolumeClaim => ({
  metadata: { name: "rt-data" },
  status: { phase },
});

describe("a start's progress", () => {
  it("waits for the pod, then for the scheduler, saying why", () => {
    assert.equal(observe({ pods: [], claims: [] }).waiting?.step, "Scheduled");
    const unschedulable = observe({
      pods: [
        pod({
          conditions: [
            {
              type: "PodScheduled",
              status: "False",
              reason: "Unschedulable",
              message: "0/3 nodes are available",
            },
          ],
        }),
      ],
      claims: [claim("Pending")],
    });
    assert.equal(unschedulable.steps.Volumes.state, "InProgress");
    assert.match(unschedulable.steps.Scheduled.message, /Unschedulable: 0\/3 nodes are available/);
    assert.equal(unschedulable.steps.Pulling.state, "Pending");
  });

  it("reports pulls from the kubelet's events and image errors from the container", () => {
    const scheduled = { spec: { nodeName: "n1", containers: [{ name: "app" }] } };
    const pulling = observe({
      pods: [
        pod(
          {
            containerStatuses: [
              {
                name: "app",
                image: "x",
                imageID: "",
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: "ContainerCreating" } },
              },
            ],
          },
          scheduled,
        ),
      ],
      claims: [claim("Bound")],
      events: [{ reason: "Pulling", message: 'Pulling image "x"', involvedObject: {}, metadata: {} }],
    });
    assert.equal(pulling.steps.Volumes.state, "Done");
    assert.equal(pulling.steps.Pulling.message, 'Pulling image "x"');
    const failed = observe({
      pods: [
        pod(
          {
            containerStatuses: [
              {
                name: "app",
                image: "x",
                imageID: "",
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: "ErrImagePull", message: "not found" } },
              },
            ],
          },
          scheduled,
        ),
      ],
      claims: [],
    });
    assert.equal(failed.waiting?.step, "Pulling");
    assert.match(failed.waiting!.message, /ErrImagePull: not found/);
  });

  it("is ready with the pod's IP once it passes its readiness probe", () => {
    const ready = observe({
      pods: [
        pod(
          {
            podIP: "127.81.0.7",
            conditions: [{ type: "Ready", status: "True" }],
            containerStatuses: [
              { name: "app", image: "x", imageID: "", ready: true, restartCount: 0, state: { running: {} } },
            ],
          },
          { spec: { nodeName: "n1", containers: [{ name: "app" }] } },
        ),
      ],
      claims: [],
    });
    assert.deepEqual(ready.ready, { pod: "rt-abc", ip: "127.81.0.7" });
    assert.equal(ready.waiting, undefined);
  });

  it("is ready once the controller's own probes saw the started pod answer, before the kubelet's", () => {
    const started = pod(
      {
        podIP: "127.81.0.8",
        conditions: [{ type: "Ready", status: "False" }],
        containerStatuses: [
          { name: "app", image: "x", imageID: "", ready: false, restartCount: 0, state: { running: {} } },
        ],
      },
      { spec: { nodeName: "n1", containers: [{ name: "app" }] } },
    );
    assert.equal(observe({ pods: [started], claims: [] }).ready, undefined);
    assert.equal(observe({ pods: [started], claims: [], answered: () => false }).ready, undefined);
    const answered = observe({ pods: [started], claims: [], answered: (p) => p === started });
    assert.deepEqual(answered.ready, { pod: "rt-abc", ip: "127.81.0.8" });
  });
});
