/**
 * Nodes and storage, ingress and priority classes through the gateway: each tenant's users see the
 * nodes of its node pool and the classes its `allowed` settings permit, with kubectl get, get -w
 * and get <name>.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  NetworkingV1Api,
  SchedulingV1Api,
  StorageV1Api,
  type V1IngressClass,
  type V1PriorityClass,
  type V1StorageClass,
} from "@kubernetes/client-node";
import { NODE_OWNER_LABEL } from "../../src/nodes/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  admin,
  core,
  createTenant,
  custom,
  deleteTenants,
  gatewayKubeconfig,
  names,
  spawnKubectl,
  startTestGateway,
  type TestGateway,
  watchFor,
} from "./support.js";

const storage = admin.makeApiClient(StorageV1Api);
const networking = admin.makeApiClient(NetworkingV1Api);
const scheduling = admin.makeApiClient(SchedulingV1Api);

function objectNames(output: string): string[] {
  return output
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split("/").pop()!)
    .sort();
}

describe("tenant gateway: nodes and classes", () => {
  const a = uniqueName("cka");
  const b = uniqueName("ckb");
  const sc = { gold: `${a}-gold`, silver: `${a}-silver` };
  const ic = { nginx: `${a}-nginx`, nginx2: `${a}-nginx-2`, haproxy: `${a}-haproxy` };
  const pc = { high: `${a}-high`, low: `${a}-low` };
  let nodeNames: string[];
  let poolNode: string;
  let alice: TestUser;
  let bob: TestUser;
  let gw: TestGateway;
  let aliceConfig: string;
  let bobConfig: string;

  const storageClass = (name: string): V1StorageClass => ({
    metadata: { name },
    provisioner: "kubernetes.io/no-provisioner",
  });
  const ingressClass = (name: string): V1IngressClass => ({
    metadata: { name },
    spec: { controller: "example.com/ingress" },
  });
  const priorityClass = (name: string, value: number): V1PriorityClass => ({ metadata: { name }, value });

  before(async () => {
    [alice, bob] = await Promise.all([testUser(uniqueName("alice")), testUser(uniqueName("bob"))]);
    // Private nodes of other tests' users are nobody's here to see.
    nodeNames = (await core.listNode()).items
      .filter((n) => n.metadata?.labels?.[NODE_OWNER_LABEL] === undefined)
      .map((n) => n.metadata!.name!)
      .sort();
    poolNode = nodeNames[1]!;
    await Promise.all([
      ...Object.values(sc).map((name) => storage.createStorageClass({ body: storageClass(name) })),
      networking.createIngressClass({ body: ingressClass(ic.nginx) }),
      networking.createIngressClass({ body: ingressClass(ic.haproxy) }),
      scheduling.createPriorityClass({ body: priorityClass(pc.high, 1000) }),
      scheduling.createPriorityClass({ body: priorityClass(pc.low, 10) }),
    ]);
    await Promise.all([
      createTenant(a, {
        owners: [{ kind: "User", name: alice.name }],
        nodePool: { nodeSelector: { "kubernetes.io/hostname": poolNode } },
        allowed: {
          storageClasses: { names: [sc.gold] },
          ingressClasses: { regex: `^${a}-nginx.*$` },
          priorityClasses: { names: [] },
        },
      }),
      createTenant(b, { owners: [{ kind: "User", name: bob.name }] }),
    ]);
    gw = await startTestGateway();
    await eventually(() =>
      assert.ok(gw.informers.tenants.get(undefined, a) && gw.informers.tenants.get(undefined, b)),
    );
    aliceConfig = gatewayKubeconfig(gw.gateway, alice);
    bobConfig = gatewayKubeconfig(gw.gateway, bob);
  });

  after(async () => {
    await gw?.stop();
    await deleteTenants([a, b]);
    for (const name of Object.values(sc)) await storage.deleteStorageClass({ name }).catch(() => {});
    for (const name of Object.values(ic)) await networking.deleteIngressClass({ name }).catch(() => {});
    for (const name of Object.values(pc)) await scheduling.deletePriorityClass({ name }).catch(() => {});
  });

  test("nodes: the tenant's node pool only; a tenant without a pool sees every node but others' private ones", async () => {
    const mine = await kubectl(aliceConfig, ["get", "nodes"]);
    assert.equal(mine.code, 0, mine.stderr);
    assert.deepEqual(names(mine.stdout), [poolNode]);
    const all = await kubectl(bobConfig, ["get", "nodes", "-o", "name"]);
    assert.deepEqual(objectNames(all.stdout), nodeNames);
    const other = await kubectl(aliceConfig, ["get", "node", nodeNames[0]!]);
    assert.match(other.stderr, new RegExp(`\\(NotFound\\): nodes "${nodeNames[0]}" not found`));
    const own = await kubectl(aliceConfig, ["get", "node", poolNode, "-o", "jsonpath={.metadata.name}"]);
    assert.equal(own.stdout, poolNode);
  });

  test("storage, ingress and priority classes: what the tenant allows, by name or regex; set but empty is none", async () => {
    const storageClasses = await kubectl(aliceConfig, ["get", "storageclasses", "-o", "name"]);
    assert.equal(storageClasses.code, 0, storageClasses.stderr);
    assert.deepEqual(objectNames(storageClasses.stdout), [sc.gold]);
    const ingressClasses = await kubectl(aliceConfig, ["get", "ingressclasses"]);
    assert.deepEqual(names(ingressClasses.stdout), [ic.nginx]);
    const priorityClasses = await kubectl(aliceConfig, ["get", "priorityclasses", "-o", "name"]);
    assert.equal(priorityClasses.code, 0, priorityClasses.stderr);
    assert.equal(priorityClasses.stdout.trim(), "");

    const silver = await kubectl(aliceConfig, ["get", "storageclass", sc.silver]);
    assert.match(silver.stderr, /\(NotFound\): storageclasses\.storage\.k8s\.io ".*" not found/);

    // Unset means any: B sees every class, the system priority classes too.
    const bobsPriority = objectNames(
      (await kubectl(bobConfig, ["get", "priorityclasses", "-o", "name"])).stdout,
    );
    for (const name of [pc.high, pc.low, "system-cluster-critical"])
      assert.ok(bobsPriority.includes(name), name);
    const bobsStorage = objectNames(
      (await kubectl(bobConfig, ["get", "storageclasses", "-o", "name"])).stdout,
    );
    for (const name of Object.values(sc)) assert.ok(bobsStorage.includes(name), name);
  });

  test("kubectl get -w shows classes as they appear, filtered", async () => {
    const watch = spawnKubectl(aliceConfig, ["get", "ingressclasses", "-w"]);
    try {
      await eventually(() => assert.deepEqual(names(watch.output()), [ic.nginx]), { timeoutMs: 15_000 });
      await networking.deleteIngressClass({ name: ic.haproxy });
      await networking.createIngressClass({ body: ingressClass(ic.haproxy) });
      await networking.createIngressClass({ body: ingressClass(ic.nginx2) });
      await eventually(() => assert.ok(names(watch.output()).includes(ic.nginx2), watch.output()), {
        timeoutMs: 15_000,
      });
    } finally {
      watch.child.kill();
    }
    assert.deepEqual([...new Set(names(watch.output()))].sort(), [ic.nginx, ic.nginx2]);
    assert.match(watch.output(), /^NAME\s+CONTROLLER/);
  });

  test("a change to the tenant's spec ends its filtered watches, so clients list again", async () => {
    const answer = await watchFor(
      gw.gateway,
      "/apis/storage.k8s.io/v1/storageclasses?watch=1&resourceVersion=0",
      alice,
      10_000,
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        await custom.patchClusterCustomObject({
          group: TENANTRY_GROUP,
          version: TENANTS_VERSION,
          plural: "tenants",
          name: a,
          body: [{ op: "add", path: "/spec/allowed/storageClasses/names/-", value: sc.silver }],
        });
      },
    );
    assert.equal(answer.status, 200);
    assert.ok(answer.ended, "the gateway closed the watch");
    assert.ok(answer.body.includes(sc.gold));
    assert.ok(!answer.body.includes(sc.silver));
    await eventually(async () => {
      const after = await kubectl(aliceConfig, ["get", "storageclasses", "-o", "name"]);
      assert.deepEqual(objectNames(after.stdout), [sc.gold, sc.silver].sort());
    });
  });
});
