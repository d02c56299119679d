import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { type ContainerView, type PodView, podPhase, podStatus } from "./pod-status.js";

const T = "2026-01-01T00:00:00Z";
const NOW = new Date("2026-01-01T00:01:00Z");

const waiting = (name: string, reason = "ContainerCreating"): ContainerView => ({
  name,
  image: "img",
  imageID: "",
  state: { waiting: { reason } },
  restartCount: 0,
  ready: false,
  started: false,
});
const running = (name: string, ready = true): ContainerView => ({
  ...waiting(name),
  imageID: "img@sha256:00",
  containerID: "process://1",
  state: { running: { startedAt: T } },
  ready,
  started: true,
});
const exited = (name: string, exitCode: number): ContainerView => ({
  ...waiting(name),
  state: { terminated: { exitCode, reason: exitCode ? "Error" : "Completed", startedAt: T, finishedAt: T } },
});
const view = (containers: ContainerView[], initContainers: ContainerView[] = []): PodView => ({
  podIP: "127.81.0.2",
  hostIP: "127.0.0.1",
  startTime: T,
  sandboxReady: true,
  initContainers,
  containers,
});
const pod = (restartPolicy = "Always", status: V1Pod["status"] = {}): V1Pod => ({
  metadata: { name: "p" },
  spec: { restartPolicy, containers: [] },
  status,
});

describe("pod status as the kubelet writes it", () => {
  test("phase: Pending until every container ran once, then by restart policy", () => {
    assert.equal(podPhase(pod(), view([waiting("a")])), "Pending");
    assert.equal(podPhase(pod(), view([running("a")], [waiting("init")])), "Pending");
    assert.equal(podPhase(pod(), view([running("a"), waiting("b")])), "Pending");
    assert.equal(podPhase(pod(), view([running("a"), exited("b", 1)])), "Running");
    assert.equal(podPhase(pod("Always"), view([exited("a", 0)])), "Running");
    assert.equal(podPhase(pod("OnFailure"), view([exited("a", 0)])), "Succeeded");
    assert.equal(podPhase(pod("OnFailure"), view([exited("a", 1)])), "Running");
    assert.equal(podPhase(pod("Never"), view([exited("a", 0), exited("b", 2)])), "Failed");
    assert.equal(podPhase(pod("Never"), view([waiting("a")], [exited("init", 1)])), "Failed");
    const crashLooping = {
      ...waiting("a", "CrashLoopBackOff"),
      last: { exitCode: 1, reason: "Error", startedAt: T, finishedAt: T },
    };
    assert.equal(podPhase(pod(), view([crashLooping])), "Running");
  });

  test("Ready follows every container's readiness; the messages name the unready ones", () => {
    const status = podStatus(pod(), view([running("a"), running("b", false)]), NOW);
    const byType = Object.fromEntries(status.conditions.map((c) => [c.type, c]));
    assert.equal(byType.Ready?.status, "False");
    assert.equal(byType.Ready?.reason, "ContainersNotReady");
    assert.equal(byType.Ready?.message, "containers with unready status: [b]");
    assert.equal(byType.Initialized?.status, "True");
    assert.equal(byType.PodReadyToStartContainers?.status, "True");
    assert.deepEqual(status.podIPs, [{ ip: "127.81.0.2" }]);
    assert.equal(status.containerStatuses[1]?.ready, false);
    const ready = podStatus(pod(), view([running("a"), running("b")]), NOW);
    assert.ok(ready.conditions.every((c) => c.status === "True"));
  });

  test("init containers gate Initialized; a sidecar counts once started", () => {
    const status = podStatus(
      pod(),
      view([waiting("app", "PodInitializing")], [exited("one", 0), running("two", false)]),
      NOW,
    );
    const initialized = status.conditions.find((c) => c.type === "Initialized")!;
    assert.equal(initialized.status, "False");
    assert.equal(initialized.message, "containers with incomplete status: [two]");
    const sidecar = { ...running("proxy", false), sidecar: true };
    const withSidecar = podStatus(pod(), view([running("app")], [exited("one", 0), sidecar]), NOW);
    assert.equal(withSidecar.conditions.find((c) => c.type === "Initialized")?.status, "True");
    assert.equal(withSidecar.conditions.find((c) => c.type === "Ready")?.status, "False");
  });

  test("a condition keeps its transition time while its status holds", () => {
    const before = pod("Always", {
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: T as unknown as Date }],
    });
    const same = podStatus(before, view([running("a")]), NOW);
    assert.equal(same.conditions.find((c) => c.type === "Ready")?.lastTransitionTime, T);
    const flipped = podStatus(before, view([running("a", false)]), NOW);
    assert.equal(
      flipped.conditions.find((c) => c.type === "Ready")?.lastTransitionTime,
      "2026-01-01T00:01:00Z",
    );
  });

  test("a pod that ended is not Ready, for PodCompleted", () => {
    const status = podStatus(pod("Never"), view([exited("a", 0)]), NOW);
    assert.equal(status.phase, "Succeeded");
    const ready = status.conditions.find((c) => c.type === "Ready")!;
    assert.equal(ready.status, "False");
    assert.equal(ready.reason, "PodCompleted");
  });
});
