/**
 * Worker nodes on demand are cluster-scoped, and what one user asked for is theirs: probed as carol
 * (another tenant, no node pool, no worker nodes) and bob (alice's fellow member), through the
 * tenant gateway and straight at kube-apiserver. Neither lists, reads, changes or deletes alice's
 * WorkerNode, nor sees her private node among the Nodes; alice sees and lists hers both ways.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { NODE_OWNER_LABEL, NODE_OWNER_TAINT, type WorkerNode } from "../../src/nodes/index.js";
import { USER_LABEL, userLabelValue } from "../../src/tenants/index.js";
import { workerNodeManifest } from "../nodes/support.js";
import { uniqueName } from "../support/clusters.js";
import { kubectl, tenantryCli } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  core,
  createTenant,
  deleteTenants,
  gatewayKubeconfig,
  startTestGateway,
  type TestGateway,
  watchFor,
} from "./support.js";

const suffix = randomBytes(3).toString("hex");
const tenantA = uniqueName("wga");
const other = uniqueName("wgo");
const workerNode = `wg-${suffix}`;
/** A Node labelled as alice's private node (what the WorkerNode controller puts on hers once it joins). */
const privateNode = `wg-private-${suffix}`;

function names(output: string): string[] {
  return output
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split("/").pop()!)
    .sort();
}

function forbidden(result: { code: number; stderr: string }, pattern: RegExp): void {
  assert.notEqual(result.code, 0, "refused");
  assert.match(result.stderr, /\(Forbidden\)/);
  assert.match(result.stderr, pattern);
}

describe("worker nodes and private Nodes are their owner's", () => {
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let gw: TestGateway;
  const via: Record<string, string> = {};

  before(async () => {
    [alice, bob, carol] = (await Promise.all(
      ["alice", "bob", "carol"].map((n) => testUser(`wg-${n}-${suffix}`)),
    )) as [TestUser, TestUser, TestUser];
    await Promise.all([
      createTenant(tenantA, {
        owners: [{ kind: "User", name: `wg-olga-${suffix}` }],
        users: [
          { name: alice.name, role: "edit" },
          { name: bob.name, role: "edit" },
        ],
        workerNodes: { maxNodes: 2 },
      }),
      createTenant(other, { owners: [{ kind: "User", name: carol.name }] }),
    ]);
    const created = await kubectl(
      alice.kubeconfigPath,
      ["create", "-f", "-"],
      workerNodeManifest(workerNode, {}),
    );
    assert.equal(created.code, 0, created.stderr);
    await core.createNode({
      body: {
        metadata: {
          name: privateNode,
          labels: { [NODE_OWNER_LABEL]: userLabelValue(alice.name), "kubernetes.io/hostname": privateNode },
        },
        spec: {
          taints: [{ key: NODE_OWNER_TAINT, value: userLabelValue(alice.name), effect: "NoSchedule" }],
        },
      },
    });
    gw = await startTestGateway();
    for (const user of [alice, bob, carol]) via[user.name] = gatewayKubeconfig(gw.gateway, user);
  });

  after(async () => {
    await gw?.stop();
    await kubectl(alice.kubeconfigPath, ["delete", "workernode", workerNode, "--wait=false"]);
    await core.deleteNode({ name: privateNode }).catch(() => {});
    await deleteTenants([tenantA, other]);
  });

  test("another tenant's user: nothing of the WorkerNode straight at kube-apiserver, any verb", async () => {
    forbidden(await kubectl(carol.kubeconfigPath, ["get", "workernodes"]), /may ask for worker nodes/);
    forbidden(await kubectl(carol.kubeconfigPath, ["get", "workernode", workerNode]), /workernodes/);
    forbidden(await kubectl(carol.kubeconfigPath, ["get", "nodeproviders"]), /nodeproviders/);
    forbidden(await kubectl(carol.kubeconfigPath, ["delete", "workernode", workerNode]), /workernodes/);
    forbidden(await kubectl(carol.kubeconfigPath, ["label", "workernode", workerNode, "x=y"]), /workernodes/);
    const asked = await kubectl(carol.kubeconfigPath, ["auth", "can-i", "create", "workernodes"]);
    assert.equal(asked.stdout.trim(), "no");
  });

  test("a fellow member: not the other's WorkerNode, and lists only with a selector naming himself", async () => {
    forbidden(
      await kubectl(bob.kubeconfigPath, ["get", "workernode", workerNode]),
      new RegExp(`WorkerNode "${workerNode}" belongs to another user`),
    );
    forbidden(
      await kubectl(bob.kubeconfigPath, ["delete", "workernode", workerNode]),
      /belongs to another user/,
    );
    forbidden(
      await kubectl(bob.kubeconfigPath, ["get", "workernodes"]),
      new RegExp(`-l ${USER_LABEL}=${userLabelValue(bob.name)}`),
    );
    forbidden(
      await kubectl(bob.kubeconfigPath, [
        "get",
        "workernodes",
        "-l",
        `${USER_LABEL}=${userLabelValue(alice.name)}`,
      ]),
      /selector naming yourself/,
    );
    const own = await kubectl(bob.kubeconfigPath, [
      "get",
      "workernodes",
      "-l",
      `${USER_LABEL}=${userLabelValue(bob.name)}`,
      "-o",
      "name",
    ]);
    assert.equal(own.code, 0, own.stderr);
    assert.equal(own.stdout.trim(), "");
  });

  test("through the gateway: each sees only their own WorkerNodes and the Nodes they may use, in lists, gets and watches", async () => {
    const carolsNodes = await kubectl(via[carol.name]!, ["get", "nodes", "-o", "name"]);
    assert.equal(carolsNodes.code, 0, carolsNodes.stderr);
    assert.ok(
      !names(carolsNodes.stdout).includes(privateNode),
      "a tenant without a pool: not others' private nodes",
    );
    assert.ok(names(carolsNodes.stdout).length > 0, "the shared nodes are there");
    const hidden = await kubectl(via[carol.name]!, ["get", "node", privateNode]);
    assert.match(hidden.stderr, /\(NotFound\)/);
    const alicesNodes = await kubectl(via[alice.name]!, ["get", "nodes", "-o", "name"]);
    assert.ok(names(alicesNodes.stdout).includes(privateNode), "alice sees her own private node");

    for (const user of [carol, bob]) {
      const listed = await kubectl(via[user.name]!, ["get", "workernodes", "-o", "name"]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.equal(listed.stdout.trim(), "", `${user.name} lists none of alice's`);
      const read = await kubectl(via[user.name]!, ["get", "workernode", workerNode]);
      assert.match(read.stderr, /\(NotFound\)/);
      const providers = await kubectl(via[user.name]!, ["get", "nodeproviders", "-o", "name"]);
      if (user === carol)
        assert.equal(providers.stdout.trim(), "", "no providers for a tenant without worker nodes");
      const watched = await watchFor(
        gw.gateway,
        "/apis/tenantry.dev/v1alpha1/workernodes?watch=1",
        user,
        1500,
      );
      assert.equal(watched.status, 200);
      assert.ok(
        !watched.body.includes(workerNode),
        `${user.name}'s watch shows none of alice's: ${watched.body}`,
      );
    }
    const mine = await kubectl(via[alice.name]!, ["get", "workernodes", "-o", "name"]);
    assert.deepEqual(names(mine.stdout), [workerNode]);
    const watched = await watchFor(
      gw.gateway,
      "/apis/tenantry.dev/v1alpha1/workernodes?watch=1",
      alice,
      1500,
    );
    assert.ok(watched.body.includes(workerNode), "alice's watch shows hers");
  });

  test("the owner: reads hers by name, lists with her selector, and `tenantry node list` shows hers", async () => {
    const read = await kubectl(alice.kubeconfigPath, ["get", "workernode", workerNode, "-o", "name"]);
    assert.equal(read.code, 0, read.stderr);
    forbidden(await kubectl(alice.kubeconfigPath, ["get", "workernodes"]), /selector naming yourself/);
    const listed = await tenantryCli(["node", "list", "-o", "json", "--kubeconfig", alice.kubeconfigPath]);
    assert.equal(listed.code, 0, listed.stderr);
    const items = (JSON.parse(listed.stdout) as { items: WorkerNode[] }).items.map((n) => n.metadata!.name);
    assert.deepEqual(items, [workerNode]);
  });
});
