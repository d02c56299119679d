/**
 * The one conformance suite every node provider runs (the MachineProvider SPI of src/nodes): the
 * simulated provider and the OpenStack provider each call `machineProviderConformance` from their
 * own test file with a fixture backed by the real thing (the harness's machines; a real Nova).
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, type KubeConfig, type V1Node } from "@kubernetes/client-node";
import {
  BOOTSTRAP_GROUP,
  bootstrapTokenSecretName,
  type Machine,
  type MachineProvider,
  newBootstrapToken,
  ProviderError,
  renderUserData,
} from "../../src/nodes/index.js";
import { eventually } from "../support/eventually.js";

export interface ProviderFixture {
  provider: MachineProvider;
  /** A flavor the provider offers. */
  flavor: string;
  /** The user data the cloud holds for the machine: what it boots from. */
  userDataOf(machine: Machine): Promise<string | undefined>;
  /** Whether an Active machine reports an IPv4 address (Nova without networks reports none). */
  reportsAddresses: boolean;
  /** The cluster its machines join, and how they reach it. */
  cluster: KubeConfig;
  /** How long building or deleting a machine, or joining, may take. Default 120 s. */
  timeoutMs?: number;
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
}

function uniqueNodeName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString("hex")}`;
}

export function machineProviderConformance(name: string, fixture: () => ProviderFixture): void {
  describe(`${name} node provider conformance`, () => {
    let f: ProviderFixture;
    const clusterId = randomUUID();
    const created: Machine[] = [];
    const timeout = () => ({ timeoutMs: f.timeoutMs ?? 120_000, intervalMs: 500 });

    before(async () => {
      f = fixture();
      await f.setUp?.();
    });
    after(async () => {
      for (const machine of created) await f.provider.deleteMachine(machine).catch(() => {});
      await f.tearDown?.();
    });

    const create = async (nodeName: string, userData: string, uid = randomUUID()): Promise<Machine> => {
      const machine = await f.provider.createMachine({
        name: nodeName,
        uid,
        clusterId,
        flavor: f.flavor,
        userData,
      });
      created.push(machine);
      return machine;
    };

    it("lists its flavors with their size", async () => {
      const flavors = await f.provider.listFlavors();
      assert.ok(
        flavors.some((flavor) => flavor.name === f.flavor),
        `offers ${f.flavor}`,
      );
      for (const flavor of flavors) {
        assert.ok(flavor.name.length > 0);
        assert.ok(Number.isInteger(flavor.vcpus) && flavor.vcpus > 0, `${flavor.name} has CPUs`);
        assert.ok(Number.isInteger(flavor.memoryMiB) && flavor.memoryMiB > 0, `${flavor.name} has memory`);
      }
    });

    it("creates a machine that carries its user data, and reports it Active with its addresses", async () => {
      const nodeName = uniqueNodeName("conf");
      const userData = `#cloud-config\n# ${nodeName}\n{}\n`;
      const uid = randomUUID();
      const machine = await create(nodeName, userData, uid);
      assert.equal(machine.name, nodeName);
      assert.ok(machine.id.length > 0, "the provider names the machine");
      assert.ok(["Building", "Active"].includes(machine.state), `a new machine is ${machine.state}`);
      const active = await eventually(async () => {
        const found = await f.provider.findMachine({ name: nodeName, uid, clusterId });
        assert.equal(found?.state, "Active", `state ${found?.state} (${found?.status})`);
        return found!;
      }, timeout());
      assert.equal(active.id, machine.id, "found by its owner, it is the same machine");
      assert.ok(active.status.length > 0, "the provider's own word for it");
      if (f.reportsAddresses) assert.match(active.addresses[0] ?? "", /^\d+\.\d+\.\d+\.\d+$/);
      assert.equal(await f.userDataOf(active), userData);
    });

    it("finds a machine only by its own node: another uid or another cluster finds nothing", async () => {
      const nodeName = uniqueNodeName("conf");
      const uid = randomUUID();
      const machine = await create(nodeName, "#cloud-config\n{}\n", uid);
      assert.equal(await f.provider.findMachine({ name: nodeName, uid: randomUUID(), clusterId }), undefined);
      assert.equal(await f.provider.findMachine({ name: nodeName, uid, clusterId: randomUUID() }), undefined);
      const listed = await f.provider.listMachines(clusterId);
      assert.ok(
        listed.some((m) => m.id === machine.id),
        "listed among the cluster's machines",
      );
      assert.deepEqual(await f.provider.listMachines(randomUUID()), [], "another cluster has none");
    });

    it("refuses an unknown flavor for good, naming it, and leaves nothing behind", async () => {
      const before = (await f.provider.listMachines(clusterId)).length;
      const nodeName = uniqueNodeName("conf");
      await assert.rejects(
        f.provider.createMachine({
          name: nodeName,
          uid: randomUUID(),
          clusterId,
          flavor: "no-such-flavor",
          userData: "#cloud-config\n{}\n",
        }),
        (err: unknown) => {
          assert.ok(err instanceof ProviderError, `a ProviderError, got ${err}`);
          assert.ok(err.permanent, "not worth retrying");
          assert.match(err.message, /no-such-flavor/);
          return true;
        },
      );
      assert.equal((await f.provider.listMachines(clusterId)).length, before);
    });

    it("boots a machine from a join configuration into a Ready Node of the cluster", async () => {
      const core = f.cluster.makeApiClient(CoreV1Api);
      const nodeName = uniqueNodeName("conf-join");
      const token = newBootstrapToken(new Date(Date.now() + 10 * 60_000));
      // A plain bootstrap token, as kubeadm makes them, with the group tenantry's RBAC lets join.
      await core.createNamespacedSecret({
        namespace: "kube-system",
        body: {
          metadata: { name: bootstrapTokenSecretName(token.id), namespace: "kube-system" },
          type: "bootstrap.kubernetes.io/token",
          stringData: {
            "token-id": token.id,
            "token-secret": token.secret,
            expiration: token.expiration.toISOString().replace(/\.\d+Z$/, "Z"),
            "usage-bootstrap-authentication": "true",
            "auth-extra-groups": BOOTSTRAP_GROUP,
          },
        },
      });
      const cluster = f.cluster.getCurrentCluster()!;
      try {
        const machine = await create(
          nodeName,
          renderUserData({
            nodeName,
            server: cluster.server,
            caPem: Buffer.from(cluster.caData ?? "", "base64").toString(),
            token,
            labels: { "conformance.tenantry.dev/provider": name },
            taints: [{ key: "conformance.tenantry.dev/provider", value: name, effect: "NoSchedule" }],
          }),
        );
        const node = await eventually(async () => {
          const found: V1Node = await core.readNode({ name: nodeName });
          assert.ok(
            found.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
            "the Node is Ready",
          );
          return found;
        }, timeout());
        assert.equal(node.metadata?.labels?.["conformance.tenantry.dev/provider"], name);
        assert.deepEqual(
          node.spec?.taints
            ?.filter((t) => t.key === "conformance.tenantry.dev/provider")
            .map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
          [{ key: "conformance.tenantry.dev/provider", value: name, effect: "NoSchedule" }],
        );
        await f.provider.deleteMachine(machine);
      } finally {
        await core.deleteNode({ name: nodeName }).catch(() => {});
        await core
          .deleteNamespacedSecret({ name: bootstrapTokenSecretName(token.id), namespace: "kube-system" })
          .catch(() => {});
      }
    });

    it("deletes a machine, and deleting it again is no error", async () => {
      const nodeName = uniqueNodeName("conf");
      const uid = randomUUID();
      const machine = await create(nodeName, "#cloud-config\n{}\n", uid);
      await eventually(async () => {
        assert.equal((await f.provider.findMachine({ name: nodeName, uid, clusterId }))?.state, "Active");
      }, timeout());
      await f.provider.deleteMachine(machine);
      await eventually(async () => {
        assert.equal(await f.provider.findMachine({ name: nodeName, uid, clusterId }), undefined);
      }, timeout());
      await f.provider.deleteMachine(machine);
      assert.ok(!(await f.provider.listMachines(clusterId)).some((m) => m.id === machine.id));
    });
  });
}
