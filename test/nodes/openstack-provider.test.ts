/**
 * The openstack provider against a real Nova (fake virtualization driver) with real Keystone,
 * Placement, Glance and Neutron (test/support/openstack.ts): the conformance suite, then WorkerNodes
 * of a NodeProvider of type openstack on the home cluster. Nova boots nothing, so the test plays the
 * hypervisor: each ACTIVE server's user data boots as a simulated machine, which joins home.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { MachineHost } from "../../src/localcluster/index.js";
import { clusterTag, NODE_OWNER_LABEL, type NodeProvider, OpenStackProvider } from "../../src/nodes/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { bootServersAsMachines, type OpenStackClient, sharedOpenStack } from "../support/openstack.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  as,
  asAdmin,
  createTenant,
  deleteTenants,
  objects,
  succeeded,
} from "../tenants/admission/support.js";
import { machineProviderConformance } from "./provider-conformance.js";
import { readWorkerNode, waitForGone, waitForPhase, workerNodeManifest } from "./support.js";

const kc = testKubeConfig("home");
const core = kc.makeApiClient(CoreV1Api);
const suffix = randomBytes(3).toString("hex");
let openstack: OpenStackClient;
let stopOpenStack: (() => Promise<void>) | undefined;
let host: MachineHost;
let stopHypervisor: (() => Promise<void>) | undefined;

interface Server {
  id: string;
  name: string;
  status: string;
  tags?: string[];
  metadata?: Record<string, string>;
  "OS-EXT-SRV-ATTR:user_data"?: string;
}

function provider(): OpenStackProvider {
  return new OpenStackProvider({
    authUrl: openstack.authUrl,
    credentials: {
      kind: "password",
      username: openstack.user.username,
      password: openstack.user.password,
      projectName: openstack.user.projectName,
      userDomainName: "Default",
      projectDomainName: "Default",
    },
    image: openstack.imageName,
    networkMode: "none",
  });
}

async function serversNamed(name: string): Promise<Server[]> {
  const { servers } = await openstack.computeAdmin<{ servers: Server[] }>(
    "GET",
    `/servers/detail?all_tenants=1&name=${encodeURIComponent(`^${name}$`)}`,
  );
  return servers;
}

before(async () => {
  const started = Date.now();
  ({ openstack, stop: stopOpenStack } = await sharedOpenStack());
  process.stderr.write(
    `openstack: ready for the tests after ${((Date.now() - started) / 1000).toFixed(1)} s (its own start: ${JSON.stringify(openstack.timings)})\n`,
  );
  host = new MachineHost({ dir: mkdtempSync(join(tmpdir(), "tenantry-nova-machines-")) });
  stopHypervisor = bootServersAsMachines(openstack, host);
});

after(async () => {
  await stopHypervisor?.();
  host?.close();
  await host?.stopAll();
  await stopOpenStack?.();
});

machineProviderConformance("openstack", () => ({
  provider: provider(),
  flavor: "m1.small",
  // Servers get no network here ("networks": "none"): Neutron answers, but binds no ports.
  reportsAddresses: false,
  cluster: kc,
  timeoutMs: 180_000,
  async userDataOf(machine) {
    const { server } = await openstack.computeAdmin<{ server: Server }>("GET", `/servers/${machine.id}`);
    const data = server["OS-EXT-SRV-ATTR:user_data"];
    return data ? Buffer.from(data, "base64").toString() : undefined;
  },
}));

describe("worker nodes of an openstack NodeProvider", () => {
  const providerName = `openstack-${suffix}`;
  const secretName = `openstack-${suffix}`;
  const tenant = uniqueName("wno");
  let owner: TestUser;

  before(async () => {
    owner = await testUser(`wno-owner-${suffix}`);
    await createTenant(tenant, {
      owners: [{ kind: "User", name: owner.name }],
      namespaces: [{ name: "dev" }],
      workerNodes: { maxNodes: 3, providers: [providerName] },
    });
    await core.createNamespacedSecret({
      namespace: "tenantry-system",
      body: {
        metadata: { name: secretName },
        stringData: {
          username: openstack.user.username,
          password: openstack.user.password,
          project_name: openstack.user.projectName,
        },
      },
    });
    const nodeProvider: NodeProvider = {
      apiVersion: TENANTS_API_VERSION,
      kind: "NodeProvider",
      metadata: { name: providerName },
      spec: {
        type: "openstack",
        openstack: {
          authUrl: openstack.authUrl,
          credentialsSecret: { name: secretName },
          image: openstack.imageName,
          networkMode: "none",
        },
      },
    };
    await objects.create(nodeProvider);
  });

  after(async () => {
    for (const name of ["os-1", "os-bad"].map((n) => `${n}-${suffix}`))
      await asAdmin(["delete", "workernode", name, "--ignore-not-found", "--wait=false"]);
    for (const name of ["os-1", "os-bad"].map((n) => `${n}-${suffix}`))
      await waitForGone(kc, name).catch(() => {});
    await asAdmin(["delete", "nodeprovider", providerName, "--ignore-not-found"]);
    await core.deleteNamespacedSecret({ name: secretName, namespace: "tenantry-system" }).catch(() => {});
    await deleteTenants([tenant]);
  });

  it("lists Nova's flavors in the NodeProvider's status", async () => {
    await eventually(
      async () => {
        const { stdout } = await asAdmin([
          "get",
          "nodeprovider",
          providerName,
          "-o",
          "jsonpath={.status.flavorSummary}",
        ]);
        assert.equal(stdout, "m1.large, m1.medium, m1.small");
      },
      { timeoutMs: 60_000 },
    );
  });

  it("builds a Nova server with the join configuration, tagged for the cluster, that joins as a private node", async () => {
    const name = `os-1-${suffix}`;
    succeeded(
      await as(
        owner,
        ["create", "-f", "-"],
        workerNodeManifest(name, { provider: providerName, flavor: "m1.small" }),
      ),
    );
    const building = await eventually(
      async () => {
        const node = await readWorkerNode(kc, name);
        assert.ok(node?.status?.machine?.id, "the server is asked for");
        return node;
      },
      { timeoutMs: 120_000 },
    );
    const running = await waitForPhase(kc, name, "Running", 240_000);
    assert.equal(running.status?.machine?.id, building.status?.machine?.id);
    assert.equal(running.status?.machine?.status, "ACTIVE");
    assert.deepEqual(
      running.status?.phases?.map((p) => p.phase),
      ["Building", "Available", "Joining", "Running"],
    );
    const [server, ...more] = await serversNamed(name);
    assert.ok(server, "Nova has the server");
    assert.deepEqual(more, [], "one server");
    const clusterId = (
      await core.readNamespacedConfigMap({ name: "tenantry-cluster-identity", namespace: "tenantry-system" })
    ).data?.clusterId;
    assert.ok(server.tags?.includes(clusterTag(clusterId!)), `tagged: ${server.tags}`);
    assert.equal(server.metadata?.["tenantry-worker-node"], name);
    assert.equal(server.metadata?.["tenantry-worker-node-uid"], running.metadata?.uid);
    assert.match(
      Buffer.from(server["OS-EXT-SRV-ATTR:user_data"] ?? "", "base64").toString(),
      /^#cloud-config\n/,
    );
    const node = await core.readNode({ name });
    assert.equal(node.metadata?.labels?.[NODE_OWNER_LABEL], owner.name);

    succeeded(await as(owner, ["delete", "workernode", name, "--wait=false"]));
    await waitForGone(kc, name, 180_000);
    assert.deepEqual(await serversNamed(name), [], "the server is deleted");
    await assert.rejects(core.readNode({ name }), (err: { code?: number }) => err.code === 404);
  });

  it("fails with Nova's own message when Nova refuses the server, and leaves nothing behind", async () => {
    const name = `os-bad-${suffix}`;
    const missingImage = randomUUID();
    succeeded(
      await as(
        owner,
        ["create", "-f", "-"],
        workerNodeManifest(name, { provider: providerName, image: missingImage }),
      ),
    );
    const failed = await waitForPhase(kc, name, "Failed", 120_000);
    assert.equal(failed.status?.reason, "ProviderRefused");
    // Nova's own words for an imageRef Glance does not have.
    assert.match(failed.status?.message ?? "", /refused the machine: Can not find requested image$/);
    assert.deepEqual(await serversNamed(name), []);
  });

  it("reports credentials Keystone refuses on the NodeProvider", async () => {
    succeeded(
      await asAdmin([
        "-n",
        "tenantry-system",
        "patch",
        "secret",
        secretName,
        "--type=merge",
        "-p",
        JSON.stringify({ stringData: { password: "wrong" } }),
      ]),
    );
    // A change of the NodeProvider makes tenantry read its Secret and list again at once.
    succeeded(
      await asAdmin([
        "patch",
        "nodeprovider",
        providerName,
        "--type=merge",
        "-p",
        '{"spec":{"joinTimeoutSeconds":601}}',
      ]),
    );
    await eventually(
      async () => {
        const { stdout } = await asAdmin([
          "get",
          "nodeprovider",
          providerName,
          "-o",
          "jsonpath={.status.conditions[0].reason}: {.status.conditions[0].message}",
        ]);
        assert.match(stdout, /^ProviderUnavailable: Keystone refused tenantry's credentials \(HTTP 401\)/);
      },
      // Nova's token cache may still refuse the old session's token for a while before tenantry asks
      // Keystone again with the new credentials.
      { timeoutMs: 180_000 },
    );
  });
});
