import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { V1Node, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import { deletionRequestedAt, evaluateTimed, lastRestart } from "./conditions.js";

const now = new Date("2026-01-01T12:00:00Z");
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000);

const pod = (fields: {
  phase?: string;
  created?: Date;
  started?: Date;
  deleted?: Date;
  grace?: number;
}): V1Pod => ({
  metadata: {
    name: "p",
    namespace: "n",
    ...(fields.created ? { creationTimestamp: fields.created } : {}),
    ...(fields.deleted
      ? { deletionTimestamp: fields.deleted, deletionGracePeriodSeconds: fields.grace ?? 0 }
      : {}),
  },
  status: {
    ...(fields.phase ? { phase: fields.phase } : {}),
    ...(fields.started ? { startTime: fields.started } : {}),
  },
});

describe("pod conditions", () => {
  it("long-running fires past the cut-off from the start time, and says when to look again before it", () => {
    const before = evaluateTimed("Pod", "long-running", 10, pod({ phase: "Running", started: ago(4) }), now);
    assert.equal(before.firing, false);
    assert.equal(before.recheckInMs, 6 * 60_000);
    const after = evaluateTimed("Pod", "long-running", 10, pod({ phase: "Running", started: ago(11) }), now);
    assert.equal(after.firing, true);
    assert.deepEqual(after.since, ago(11));
    assert.match(after.message!, /running for 11 min \(cut-off 10 min\)/);
    assert.equal(
      evaluateTimed("Pod", "long-running", 10, pod({ phase: "Succeeded", started: ago(60) }), now).firing,
      false,
    );
  });

  it("long-pending counts from creation and ends when the pod runs or is deleted", () => {
    assert.equal(evaluateTimed("Pod", "long-pending", 0.05, pod({ created: ago(1) }), now).firing, true);
    assert.equal(
      evaluateTimed("Pod", "long-pending", 0.05, pod({ phase: "Pending", created: ago(0.01) }), now).firing,
      false,
    );
    assert.equal(
      evaluateTimed("Pod", "long-pending", 0.05, pod({ phase: "Running", created: ago(1) }), now).firing,
      false,
    );
    assert.equal(
      evaluateTimed(
        "Pod",
        "long-pending",
        0.05,
        pod({ phase: "Pending", created: ago(1), deleted: ago(0) }),
        now,
      ).firing,
      false,
    );
  });

  it("long-terminating counts from when deletion was asked for, not from the end of the grace period", () => {
    const terminating = pod({ phase: "Running", created: ago(60), deleted: ago(-0.5), grace: 60 });
    assert.deepEqual(deletionRequestedAt(terminating), ago(0.5));
    assert.equal(evaluateTimed("Pod", "long-terminating", 1, terminating, now).firing, false);
    assert.equal(evaluateTimed("Pod", "long-terminating", 0.4, terminating, now).firing, true);
    assert.equal(evaluateTimed("Pod", "long-terminating", 0.4, pod({ phase: "Running" }), now).firing, false);
  });

  it("last-restart fires while the latest restart is recent and resolves when it ages out", () => {
    const restarted: V1Pod = {
      metadata: { name: "p" },
      status: {
        phase: "Running",
        containerStatuses: [
          {
            name: "a",
            image: "i",
            imageID: "",
            ready: true,
            restartCount: 2,
            lastState: { terminated: { exitCode: 1, finishedAt: ago(3) } },
          },
          {
            name: "b",
            image: "i",
            imageID: "",
            ready: true,
            restartCount: 1,
            lastState: { terminated: { exitCode: 1, finishedAt: ago(2) } },
          },
        ],
      },
    };
    assert.deepEqual(lastRestart(restarted), ago(2));
    const recent = evaluateTimed("Pod", "last-restart", 5, restarted, now);
    assert.equal(recent.firing, true);
    assert.equal(recent.recheckInMs, 3 * 60_000);
    assert.match(recent.message!, /3 restarts/);
    assert.equal(evaluateTimed("Pod", "last-restart", 1, restarted, now).firing, false);
    assert.equal(evaluateTimed("Pod", "last-restart", 5, pod({ phase: "Running" }), now).firing, false);
  });
});

describe("claim and node conditions", () => {
  it("a claim pending past its cut-off fires; a bound one does not", () => {
    const claim = (phase?: string): V1PersistentVolumeClaim => ({
      metadata: { name: "c", creationTimestamp: ago(2) },
      ...(phase ? { status: { phase } } : {}),
    });
    assert.equal(evaluateTimed("PersistentVolumeClaim", "long-pending", 1, claim(), now).firing, true);
    assert.equal(
      evaluateTimed("PersistentVolumeClaim", "long-pending", 1, claim("Pending"), now).firing,
      true,
    );
    assert.equal(
      evaluateTimed("PersistentVolumeClaim", "long-pending", 1, claim("Bound"), now).firing,
      false,
    );
    assert.equal(evaluateTimed("PersistentVolumeClaim", "long-pending", 3, claim(), now).firing, false);
  });

  it("a node not Ready since the cut-off fires with its reason; a Ready one does not", () => {
    const node = (status: string, since: Date): V1Node => ({
      metadata: { name: "n", creationTimestamp: ago(100) },
      status: {
        conditions: [{ type: "Ready", status, lastTransitionTime: since, reason: "KubeletStopped" }],
      },
    });
    const notReady = evaluateTimed("Node", "not-ready", 1, node("Unknown", ago(2)), now);
    assert.equal(notReady.firing, true);
    assert.match(notReady.message!, /not ready for 2\.0 min .*KubeletStopped/);
    assert.equal(evaluateTimed("Node", "not-ready", 1, node("False", ago(0.5)), now).firing, false);
    assert.equal(evaluateTimed("Node", "not-ready", 1, node("True", ago(50)), now).firing, false);
    // No Ready condition at all: not ready since the node was created.
    assert.equal(
      evaluateTimed("Node", "not-ready", 1, { metadata: { creationTimestamp: ago(2) } }, now).firing,
      true,
    );
  });
});
