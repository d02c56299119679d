/**
 * A logical cloud's status tells what is true on every cluster, and the overall state changes only
 * when every cluster got there: a failed, rolled-back instantiation never says Instantiated; a
 * terminate is Terminated only once every cluster is Removed, and a DELETE meanwhile is refused
 * naming the clusters still being cleaned; a project deleted and made again at once takes clouds.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { PatchStrategy } from "@kubernetes/client-node";
import { adminClient } from "../multicluster/support.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { cloudPath, cloudsApi, createCloud, removeProject, statusBecomes } from "./support.js";

const HOLD = "test.tenantry.dev/hold";

describe("logical clouds: honest status", () => {
  const project = uniqueName("honest");
  const edge2 = adminClient("edge-2");
  const references = [
    { metadata: { name: "e1" }, spec: { cluster: "edge-1" } },
    { metadata: { name: "e2" }, spec: { cluster: "edge-2" } },
  ];

  after(async () => {
    await removeProject(project);
  });

  test("a failed, rolled-back instantiation reports the failure and never says Instantiated; nothing left, it may be deleted", async () => {
    const cloud = uniqueName("lc");
    // Someone else's namespace of the cloud's name on edge-2: edge-2 refuses, edge-1 is rolled back.
    await edge2.core.createNamespace({ body: { metadata: { name: cloud } } });
    try {
      await createCloud(project, cloud, { references });
      const asked = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`);
      assert.equal(asked.status, 202, asked.text);
      const seen = new Set<string>();
      const settled = await statusBecomes(project, cloud, (s) => {
        seen.add(`state ${s.state}`);
        for (const a of s.states.actions) seen.add(`action ${a.state}`);
        assert.equal(s.deployedStatus, "InstantiateFailed", JSON.stringify(s));
        for (const c of s.clusters) assert.equal(c.state, "Removed", JSON.stringify(s));
      });
      assert.ok(!seen.has("state Instantiated"), `the state said Instantiated: ${[...seen].join(", ")}`);
      assert.ok(!seen.has("action Instantiated"), `an action said Instantiated: ${[...seen].join(", ")}`);
      assert.equal(settled.state, "Created", JSON.stringify(settled));
      const action = settled.states.actions.find(
        (a: { instance: string }) => a.instance === asked.body.instance,
      );
      assert.deepEqual(
        [action.action, action.state, action.deployedStatus],
        ["Instantiate", "Created", "InstantiateFailed"],
      );
      assert.match(settled.message, /rolled back everywhere/);
      const summary = await cloudsApi("GET", `${cloudPath(project, cloud)}/status`);
      assert.equal(summary.body.readyStatus, "NotReady");

      const deleted = await cloudsApi("DELETE", cloudPath(project, cloud));
      assert.equal(deleted.status, 204, deleted.text);
    } finally {
      await edge2.core.deleteNamespace({ name: cloud }).catch(() => {});
    }
  });

  test("terminate: Terminated only once every cluster is Removed; a DELETE meanwhile is a 409 naming the cluster, and works right after", async () => {
    const cloud = uniqueName("lc");
    await createCloud(project, cloud, { references });
    assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`)).status, 202);
    const up = await statusBecomes(project, cloud, (s) =>
      assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s)),
    );
    assert.equal(up.state, "Instantiated");

    // edge-2's namespace lingers (a finalizer), as one holding many objects does.
    const hold = (finalizers: string[]) =>
      edge2.objects.patchRaw(
        { apiVersion: "v1", kind: "Namespace", metadata: { name: cloud, finalizers } },
        PatchStrategy.MergePatch,
      );
    await hold([HOLD]);
    try {
      assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/terminate`)).status, 202);
      const removing = await statusBecomes(project, cloud, (s) => {
        const byCluster = Object.fromEntries(
          s.clusters.map((c: { cluster: string; state: string }) => [c.cluster, c.state]),
        );
        assert.deepEqual(byCluster, { "edge-1": "Removed", "edge-2": "Removing" }, JSON.stringify(s));
      });
      assert.equal(removing.deployedStatus, "Terminating", JSON.stringify(removing));
      assert.notEqual(removing.state, "Terminated", JSON.stringify(removing));
      const action = removing.states.actions.at(-1);
      assert.deepEqual([action.action, action.deployedStatus], ["Terminate", "Terminating"]);
      assert.notEqual(action.state, "Terminated");

      const refused = await cloudsApi("DELETE", cloudPath(project, cloud));
      assert.equal(refused.status, 409, refused.text);
      assert.match(refused.headers["content-type"] as string, /^application\/problem\+json/);
      assert.match(refused.body.detail, /still being removed from "edge-2" \(Removing/);
      assert.equal(refused.headers["retry-after"], "2");
    } finally {
      await hold([]);
    }
    const terminated = await statusBecomes(project, cloud, (s) => {
      assert.equal(s.deployedStatus, "Terminated", JSON.stringify(s));
    });
    assert.equal(terminated.state, "Terminated");
    for (const c of terminated.clusters) assert.equal(c.state, "Removed");
    const deleted = await cloudsApi("DELETE", cloudPath(project, cloud));
    assert.equal(deleted.status, 204, deleted.text);
  });

  test("a project deleted and made again at once takes a logical cloud that works", async () => {
    const again = uniqueName("again");
    const first = uniqueName("lc");
    await createCloud(again, first, { references: [references[0]] });
    assert.equal((await cloudsApi("DELETE", cloudPath(again, first))).status, 204);
    await eventually(async () => {
      const left = await cloudsApi("GET", `/v2/projects/${again}/logical-clouds`);
      assert.deepEqual(left.body, [], left.text);
    });
    const deleted = await cloudsApi("DELETE", `/v2/projects/${again}`);
    assert.equal(deleted.status, 204, deleted.text);

    // Made again at once: made, or refused upfront saying why (and when to ask again), never half-made.
    await eventually(
      async () => {
        const made = await cloudsApi("POST", "/v2/projects", { body: { metadata: { name: again } } });
        if (made.status === 409) {
          assert.match(made.body.detail, /still going/);
          assert.equal(made.headers["retry-after"], "2");
        }
        assert.equal(made.status, 201, made.text);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const second = uniqueName("lc");
    try {
      await createCloud(again, second, { references: [references[0]] });
      assert.equal((await cloudsApi("POST", `${cloudPath(again, second)}/instantiate`)).status, 202);
      await statusBecomes(again, second, (s) =>
        assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s)),
      );
      assert.equal((await cloudsApi("GET", cloudPath(again, second))).status, 200);
    } finally {
      await removeProject(again);
    }
  });
});
