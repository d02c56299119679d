import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Lifecycle, LogicalCloud } from "./api/logical-cloud.js";
import { cloudState, recordAction } from "./controller.js";

function cloud(lifecycle?: Partial<Lifecycle>): LogicalCloud {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "LogicalCloud",
    metadata: { name: "lc1", namespace: "tenantry-project-p", uid: "uid-1", generation: 3 },
    spec: {
      namespace: "lc1",
      ...(lifecycle
        ? {
            lifecycle: {
              action: "Instantiate",
              instance: "i1",
              requestedAt: "2026-01-01T00:00:00Z",
              ...lifecycle,
            } as Lifecycle,
          }
        : {}),
    },
  };
}

describe("cloudState: the last action's state only once every cluster got there", () => {
  it("an instantiation in progress, or failed and rolled back, leaves the state as it was", () => {
    assert.equal(cloudState(cloud({}), "Created", "Instantiating", false, false), "Created");
    assert.equal(cloudState(cloud({}), "Created", "InstantiateFailed", false, false), "Created");
    assert.equal(cloudState(cloud({}), "Terminated", "InstantiateFailed", false, false), "Terminated");
    assert.equal(cloudState(cloud({}), "Created", "Instantiated", false, false), "Instantiated");
    assert.equal(
      cloudState(cloud({ action: "Update" }), "Instantiated", "Instantiating", false, false),
      "Instantiated",
    );
    assert.equal(
      cloudState(cloud({ action: "Update" }), "Instantiated", "Instantiated", false, false),
      "Updated",
    );
  });

  it("Terminated only when every cluster is Removed", () => {
    const terminate = cloud({ action: "Terminate", instance: "t1" });
    assert.equal(cloudState(terminate, "Instantiated", "Terminating", false, false), "Instantiated");
    assert.equal(cloudState(terminate, "Instantiated", "Terminated", false, false), "Terminated");
    assert.equal(cloudState(cloud({}), "Instantiated", "Terminating", true, false), "Instantiated");
    assert.equal(cloudState(terminate, "Instantiated", "TerminateFailed", false, true), "TerminateStopped");
  });

  it("never instantiated: Created; retries stopped: the Stopped state", () => {
    assert.equal(cloudState(cloud(), undefined, undefined, false, false), "Created");
    assert.equal(cloudState(cloud({}), "Created", "InstantiateFailed", false, true), "InstantiateStopped");
  });
});

describe("recordAction", () => {
  it("records the action when taken up and updates it as it gets further, keeping when and at which revision", () => {
    const c = cloud({});
    const first = recordAction([], c, "Created", "Instantiating", Date.parse("2026-01-01T00:00:01Z"));
    assert.deepEqual(first, [
      {
        action: "Instantiate",
        state: "Created",
        deployedStatus: "Instantiating",
        instance: "i1",
        time: "2026-01-01T00:00:01Z",
        revision: 3,
      },
    ]);
    const later = recordAction(first, c, "Created", "InstantiateFailed", Date.parse("2026-01-01T00:00:09Z"));
    assert.equal(later.length, 1);
    assert.equal(later[0]!.deployedStatus, "InstantiateFailed");
    assert.equal(later[0]!.state, "Created");
    assert.equal(later[0]!.time, "2026-01-01T00:00:01Z");
    const next = recordAction(later, cloud({ instance: "i2" }), "Instantiated", "Instantiated", Date.now());
    assert.deepEqual(
      next.map((a) => [a.instance, a.state]),
      [
        ["i1", "Created"],
        ["i2", "Instantiated"],
      ],
    );
  });
});
