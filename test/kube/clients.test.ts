import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KubeConfig, type V1Namespace } from "@kubernetes/client-node";
import { ClusterClient, isNotFound, KubeListWatch } from "../../src/kube/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";

const CLUSTERS = ["home", "edge-1", "edge-2"] as const;
const CLUSTER_ANNOTATION = "tenantry.dev/written-to";
/** Same name in every cluster: each client must find its own cluster's copy. */
const namespace = uniqueName("kube-clients");

/**
 * The cluster's admin kubeconfig with its user renamed to plain `admin` and, optionally, its
 * client certificate handed out by an exec credential plugin instead of being embedded. Real
 * kubeconfigs of different clusters very often share such a user name.
 */
function adminKubeConfig(cluster: string, { viaExecPlugin = false } = {}): KubeConfig {
  const source = testKubeConfig(cluster);
  const user = source.getCurrentUser();
  const server = source.getCurrentCluster();
  assert.ok(
    user?.certData && user.keyData && server,
    `kubeconfig of ${cluster} has an embedded admin certificate`,
  );
  const credential = {
    apiVersion: "client.authentication.k8s.io/v1",
    kind: "ExecCredential",
    status: {
      clientCertificateData: Buffer.from(user.certData, "base64").toString("utf8"),
      clientKeyData: Buffer.from(user.keyData, "base64").toString("utf8"),
      // Without an expiry client-node would run the plugin for every request instead of caching.
      expirationTimestamp: new Date(Date.now() + 3_600_000).toISOString(),
    },
  };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ ...server, name: "cluster" }],
    users: [
      viaExecPlugin
        ? {
            name: "admin",
            exec: {
              apiVersion: "client.authentication.k8s.io/v1",
              command: process.execPath,
              args: ["-e", "process.stdout.write(process.env.EXEC_CREDENTIAL)"],
              env: [{ name: "EXEC_CREDENTIAL", value: JSON.stringify(credential) }],
            },
          }
        : { name: "admin", certData: user.certData, keyData: user.keyData },
    ],
    contexts: [{ name: "admin@cluster", cluster: "cluster", user: "admin" }],
    currentContext: "admin@cluster",
  });
  return kubeConfig;
}

before(async () => {
  await Promise.all(
    CLUSTERS.map((cluster) =>
      new ClusterClient(cluster, testKubeConfig(cluster)).core.createNamespace({
        body: { metadata: { name: namespace, annotations: { [CLUSTER_ANNOTATION]: cluster } } },
      }),
    ),
  );
});

after(async () => {
  await Promise.all(
    CLUSTERS.map((cluster) =>
      new ClusterClient(cluster, testKubeConfig(cluster)).core
        .deleteNamespace({ name: namespace })
        .catch((error) => {
          if (!isNotFound(error)) throw error;
        }),
    ),
  );
});

/** Reads, lists and watches through every client at the same time; each must see only its own cluster. */
async function assertEachSeesItsOwnCluster(clients: ClusterClient[]): Promise<void> {
  const results = await Promise.all(
    clients.map(async (client) => {
      const [read, system, listed, watched] = await Promise.all([
        client.core.readNamespace({ name: namespace }),
        client.core.readNamespace({ name: "kube-system" }),
        client.objects.getJson(await client.objects.collectionPath("v1", "Namespace"), {
          labelSelector: `kubernetes.io/metadata.name=${namespace}`,
        }) as Promise<{ items: V1Namespace[] }>,
        firstWatchedNamespace(client),
      ]);
      return { client, read, system, listed, watched };
    }),
  );
  for (const { client, read, listed, watched } of results) {
    assert.equal(read.metadata?.annotations?.[CLUSTER_ANNOTATION], client.name, `${client.name}: read`);
    assert.equal(
      listed.items[0]?.metadata?.annotations?.[CLUSTER_ANNOTATION],
      client.name,
      `${client.name}: list`,
    );
    assert.equal(watched.metadata?.annotations?.[CLUSTER_ANNOTATION], client.name, `${client.name}: watch`);
  }
  const systemUids = new Set(results.map((result) => result.system.metadata?.uid));
  assert.equal(systemUids.size, clients.length, "every client reached a different cluster");
}

/** The test namespace as the first event of a watch from resourceVersion "0" (the current state). */
function firstWatchedNamespace(client: ClusterClient): Promise<V1Namespace> {
  const source = new KubeListWatch<V1Namespace>(client, {
    apiVersion: "v1",
    kind: "Namespace",
    fieldSelector: `metadata.name=${namespace}`,
  });
  return new Promise((resolve, reject) => {
    const handle = source.watch(
      "0",
      30,
      (event) => {
        resolve(event.object as V1Namespace);
        handle.abort();
      },
      (error) => reject(error ?? new Error("watch ended before the first event")),
    );
  });
}

describe("ClusterClient against home, edge-1 and edge-2 at once", () => {
  test("three clients in one process, whose kubeconfigs all name their user admin, each reach their own cluster", async () => {
    const clients = CLUSTERS.map((cluster) => new ClusterClient(cluster, adminKubeConfig(cluster)));
    assert.deepEqual(
      clients.map((client) => client.kubeConfig.getCurrentUser()?.name),
      ["home/admin", "edge-1/admin", "edge-2/admin"],
    );
    assert.equal(new Set(clients.map((client) => client.server)).size, 3);
    await assertEachSeesItsOwnCluster(clients);
  });

  test("credentials from an exec plugin, cached by user name, are never sent to another cluster", async () => {
    // Each cluster has its own CA, so another cluster's certificate would be refused with 401.
    const clients = CLUSTERS.map(
      (cluster) => new ClusterClient(cluster, adminKubeConfig(cluster, { viaExecPlugin: true })),
    );
    await assertEachSeesItsOwnCluster(clients);
    // Again, now that every client has a cached credential.
    await assertEachSeesItsOwnCluster(clients);
  });

  test("every typed API client works against the real server", async () => {
    const client = new ClusterClient("edge-1", testKubeConfig("edge-1"));
    await client.coordination.createNamespacedLease({
      namespace,
      body: { metadata: { name: "probe" }, spec: { holderIdentity: "clients-test" } },
    });
    const [deployments, leases, crds, namespaces] = await Promise.all([
      client.apps.listNamespacedDeployment({ namespace }),
      client.coordination.listNamespacedLease({ namespace }),
      client.apiextensions.listCustomResourceDefinition(),
      client.core.listNamespace({ fieldSelector: `metadata.name=${namespace}` }),
    ]);
    assert.deepEqual(deployments.items, []);
    assert.deepEqual(
      leases.items.map((lease) => lease.spec?.holderIdentity),
      ["clients-test"],
    );
    assert.ok(Array.isArray(crds.items));
    assert.equal(namespaces.items[0]?.metadata?.annotations?.[CLUSTER_ANNOTATION], "edge-1");
  });
});
