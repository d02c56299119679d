/**
 * Multi-Cluster Services (KEP-1645) over the shared topology: home consumes edge-1 and edge-2.
 * A Service exported in an offloaded namespace is imported in every cluster of the namespace,
 * resolves as `<svc>.<ns>.svc.clusterset.local` from each cluster's CoreDNS, and follows its
 * endpoints; conflicts are reported on the exports; and what tenants may not do, they cannot.
 */
import assert from "node:assert/strict";
import { Resolver } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  DiscoveryV1Api,
  type KubernetesObject,
  PatchStrategy,
  type V1EndpointSlice,
  type V1Service,
} from "@kubernetes/client-node";
import { ClusterClient, type Condition, isNotFound } from "../../src/kube/index.js";
import { PROCESS_NODE_NAME } from "../../src/localcluster/index.js";
import { type NamespaceOffloading, REMAPS_CONFIGMAP, remapAddress } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { podReady, runInPod } from "../support/process-node.js";
import { testUser } from "../support/users.js";
import { adminClient, echoPod, kubeconfigPath, tenantryOn } from "./support.js";

const MCS = "multicluster.x-k8s.io/v1alpha1";
const SERVICE_NAME = "multicluster.kubernetes.io/service-name";
const SOURCE_CLUSTER = "multicluster.kubernetes.io/source-cluster";

const clients: Record<string, ClusterClient> = {
  home: adminClient("home"),
  "edge-1": adminClient("edge-1"),
  "edge-2": adminClient("edge-2"),
};
const home = clients.home!;
const edge1 = clients["edge-1"]!;
const ns = uniqueName("mcs");

interface Imported extends KubernetesObject {
  spec?: { type?: string; ips?: string[]; ports?: { name?: string; port: number; protocol?: string }[] };
  status?: { clusters?: { cluster: string }[] };
}

async function read<T extends KubernetesObject>(
  client: ClusterClient,
  apiVersion: string,
  kind: string,
  name: string,
  namespace = ns,
): Promise<T | undefined> {
  try {
    return (await client.objects.read({ apiVersion, kind, metadata: { name, namespace } })) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

const readImport = (client: ClusterClient, name: string, namespace = ns) =>
  read<Imported>(client, MCS, "ServiceImport", name, namespace);

async function exportConditions(client: ClusterClient, name: string, namespace = ns): Promise<Condition[]> {
  const found = await read<KubernetesObject & { status?: { conditions?: Condition[] } }>(
    client,
    MCS,
    "ServiceExport",
    name,
    namespace,
  );
  return found?.status?.conditions ?? [];
}

async function importedSlices(
  client: ClusterClient,
  name: string,
  namespace = ns,
): Promise<V1EndpointSlice[]> {
  const list = await client.kubeConfig.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
    namespace,
    labelSelector: `${SERVICE_NAME}=${name}`,
  });
  return list.items;
}

function addressesOf(slices: V1EndpointSlice[]): string[] {
  return slices.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses)).sort();
}

/** A Service without selector and its EndpointSlice, as any controller of endpoints writes them. */
async function serviceWithEndpoints(
  client: ClusterClient,
  name: string,
  addresses: string[],
  headless = false,
) {
  await client.core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name },
      spec: {
        ...(headless ? { clusterIP: "None" } : {}),
        ports: [{ name: "http", port: 80, protocol: "TCP" }],
      },
    },
  });
  await setEndpoints(client, name, addresses);
}

async function setEndpoints(client: ClusterClient, name: string, addresses: string[]) {
  const body: V1EndpointSlice = {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${name}-manual`,
      namespace: ns,
      labels: {
        "kubernetes.io/service-name": name,
        "endpointslice.kubernetes.io/managed-by": "test.tenantry.dev",
      },
    },
    addressType: "IPv4",
    endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  };
  await client.objects.patchRaw(body, PatchStrategy.ServerSideApply, { fieldManager: "test", force: true });
}

async function exportService(client: ClusterClient, name: string, namespace = ns) {
  await client.objects.create({ apiVersion: MCS, kind: "ServiceExport", metadata: { name, namespace } });
}

/** CoreDNS of a cluster, on 127.0.0.1 at the port its harness recorded. */
function resolverOf(cluster: string): Resolver {
  const state = JSON.parse(readFileSync(join(dirname(kubeconfigPath(cluster)), "state.json"), "utf8"));
  const port = state.ports?.dns;
  assert.ok(port, `CoreDNS port of ${cluster} in its state.json`);
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  return resolver;
}

/** Addresses of cluster `source`'s pods as `importer` dials them: through the gateways that join them. */
type SeenFrom = (address: string) => string;

/** Where `importer` sees `source`'s pods (the range its network controller chose for them). */
async function seenFrom(source: string, importer: string): Promise<SeenFrom> {
  const podCidr = (await clients[source]!.core.readNode({ name: PROCESS_NODE_NAME })).spec!.podCIDR!;
  const range = await eventually(
    async () => {
      const map = await clients[importer]!.core.readNamespacedConfigMap({
        name: REMAPS_CONFIGMAP,
        namespace: "tenantry-system",
      });
      const found = map.data?.[tenantryOn(source).clusterId];
      assert.ok(found, `${importer} has no range for ${source} yet: ${JSON.stringify(map.data)}`);
      return found;
    },
    { timeoutMs: 120_000 },
  );
  return (address) => remapAddress(address, podCidr, range)!;
}

/** Endpoint addresses in home's pod range (no pod needs to answer at them). */
let homeAddress: (host: number) => string;
/** Per cluster, how it dials home's pods: home itself as they are, each provider through its gateway. */
const fromHome: Record<string, SeenFrom> = {};

before(async () => {
  const homeCidr = (await home.core.readNode({ name: PROCESS_NODE_NAME })).spec!.podCIDR!;
  homeAddress = (host) => remapAddress(`10.0.0.${host}`, "10.0.0.0/24", homeCidr)!;
  fromHome.home = (address) => address;
  for (const edge of ["edge-1", "edge-2"]) fromHome[edge] = await seenFrom("home", edge);
  await home.core.createNamespace({ body: { metadata: { name: ns } } });
  await home.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace: ns },
    // Namespace sameness (KEP-1645): the namespace has the same name in every cluster.
    spec: { namespaceMappingStrategy: "EnforceSameName", podOffloadingStrategy: "LocalAndRemote" },
  } as never);
  await eventually(
    async () => {
      const current = (await home.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceOffloading",
        metadata: { name: "offloading", namespace: ns },
      })) as unknown as NamespaceOffloading;
      assert.equal(current.status?.offloadingPhase, "Ready", JSON.stringify(current.status));
      assert.equal(current.status?.remoteNamespaceName, ns);
    },
    { timeoutMs: 60_000 },
  );
});

after(async () => {
  await home.core.deleteNamespace({ name: ns }).catch(() => {});
});

describe("exporting a Service of an offloaded namespace", () => {
  test("home exports: a ClusterSetIP import with home's endpoints in home, edge-1 and edge-2; the export is Valid and Ready", async () => {
    await serviceWithEndpoints(home, "web", [homeAddress(210), homeAddress(211)]);
    await exportService(home, "web");
    for (const [cluster, client] of Object.entries(clients)) {
      const imported = await eventually(
        async () => {
          const found = await readImport(client, "web");
          assert.equal(found?.spec?.type, "ClusterSetIP", `${cluster}: ${JSON.stringify(found)}`);
          assert.equal(found?.spec?.ips?.length, 1, `${cluster}: a clusterset IP`);
          assert.deepEqual(found?.status?.clusters, [{ cluster: "home" }], cluster);
          return found!;
        },
        { timeoutMs: 60_000 },
      );
      assert.deepEqual(imported.spec?.ports, [{ name: "http", port: 80, protocol: "TCP" }]);
      // The clusterset IP is the ClusterIP of the import's selector-less derived Service there.
      const derived = (await client.core.listNamespacedService({ namespace: ns })).items.find(
        (s: V1Service) => s.spec?.clusterIP === imported.spec!.ips![0],
      );
      assert.ok(derived, `${cluster}: the derived Service holds the clusterset IP`);
      assert.equal(derived.spec?.selector, undefined);
      assert.equal(derived.metadata?.ownerReferences?.[0]?.kind, "ServiceImport");
      // Each cluster gets the addresses it dials: home's own, the providers' through their gateways.
      const slices = await eventually(async () => {
        const found = await importedSlices(client, "web");
        assert.deepEqual(
          addressesOf(found),
          [210, 211].map(homeAddress).map(fromHome[cluster]!).sort(),
          cluster,
        );
        return found;
      });
      for (const slice of slices) {
        assert.equal(slice.metadata?.labels?.[SOURCE_CLUSTER], "home");
        assert.equal(slice.metadata?.labels?.["kubernetes.io/service-name"], derived.metadata?.name);
      }
    }
    const conditions = await eventually(async () => {
      const found = await exportConditions(home, "web");
      assert.equal(found.find((c) => c.type === "Ready")?.status, "True", JSON.stringify(found));
      return found;
    });
    assert.equal(conditions.find((c) => c.type === "Valid")?.status, "True");
    assert.equal(conditions.find((c) => c.type === "Conflict")?.status, "False");
  });

  test("web.<ns>.svc.clusterset.local resolves from edge-1's CoreDNS to edge-1's clusterset IP; headless to the endpoints", async () => {
    const resolver = resolverOf("edge-1");
    await eventually(
      async () => {
        const imported = await readImport(edge1, "web");
        assert.ok(imported?.spec?.ips?.length, "edge-1's import has its clusterset IP");
        assert.deepEqual(await resolver.resolve4(`web.${ns}.svc.clusterset.local`), imported.spec.ips);
      },
      { timeoutMs: 60_000 },
    );
    await serviceWithEndpoints(home, "db", [homeAddress(220)], true);
    await exportService(home, "db");
    await eventually(
      async () => {
        assert.deepEqual(await resolver.resolve4(`db.${ns}.svc.clusterset.local`), [
          fromHome["edge-1"]!(homeAddress(220)),
        ]);
      },
      { timeoutMs: 60_000 },
    );
    assert.equal((await readImport(edge1, "db"))?.spec?.type, "Headless");
    await assert.rejects(resolver.resolve4(`nothing.${ns}.svc.clusterset.local`), { code: "ENOTFOUND" });
  });

  test("endpoints added and removed in home follow in edge-1 and edge-2", async () => {
    const hosts = [210, 211, 212];
    await setEndpoints(home, "web", hosts.map(homeAddress));
    for (const edge of ["edge-1", "edge-2"]) {
      await eventually(async () => {
        assert.deepEqual(
          addressesOf(await importedSlices(clients[edge]!, "web")),
          hosts.map(homeAddress).map(fromHome[edge]!).sort(),
        );
      });
    }
    await setEndpoints(home, "web", [homeAddress(212)]);
    for (const edge of ["edge-1", "edge-2"]) {
      await eventually(async () => {
        assert.deepEqual(addressesOf(await importedSlices(clients[edge]!, "web")), [
          fromHome[edge]!(homeAddress(212)),
        ]);
      });
    }
  });

  test("an endpoint that is not one of home's pods is not imported where a gateway joins the clusters", async () => {
    // Dialled unchanged in edge-1 the address would reach a pod of edge-1's own.
    await setEndpoints(home, "web", [homeAddress(212), homeAddress(213), "10.244.7.13"]);
    for (const edge of ["edge-1", "edge-2"]) {
      // The update arrived (213 is there), without the address that is not a pod of home's.
      await eventually(async () => {
        assert.deepEqual(
          addressesOf(await importedSlices(clients[edge]!, "web")),
          [212, 213].map(homeAddress).map(fromHome[edge]!).sort(),
        );
      });
    }
    assert.deepEqual(
      addressesOf(await importedSlices(home, "web")),
      [homeAddress(212), homeAddress(213), "10.244.7.13"].sort(),
    );
  });

  test("an export in edge-1's replica of a Service whose port drifted: PortConflict on it, the oldest (home's) port kept", async () => {
    await eventually(async () => assert.ok(await read(edge1, "v1", "Service", "web"), "the reflected copy"));
    // The copy in edge-1 changed there: an older export (home's) defines port http differently.
    await edge1.objects.patchRaw(
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "web", namespace: ns },
        spec: { ports: [{ name: "http", port: 81, protocol: "TCP" }] },
      } as KubernetesObject,
      // A merge patch replaces the list: port 80 gives way to 81.
      PatchStrategy.MergePatch,
    );
    await exportService(edge1, "web");
    try {
      await portConflictReported();
    } finally {
      await edge1.objects
        .delete({ apiVersion: MCS, kind: "ServiceExport", metadata: { name: "web", namespace: ns } })
        .catch(() => {});
    }
    await eventually(async () => {
      const found = await readImport(clients["edge-2"]!, "web");
      assert.deepEqual(found?.status?.clusters, [{ cluster: "home" }]);
    });
  });

  async function portConflictReported() {
    const conflict = await eventually(
      async () => {
        const found = (await exportConditions(edge1, "web")).find((c) => c.type === "Conflict");
        assert.equal(found?.status, "True", JSON.stringify(found));
        return found!;
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(conflict.reason, "PortConflict");
    assert.match(conflict.message, /cluster home/);
    assert.equal((await exportConditions(home, "web")).find((c) => c.type === "Conflict")?.status, "False");
    const imported = await eventually(async () => {
      const found = await readImport(clients["edge-2"]!, "web");
      assert.deepEqual(found?.status?.clusters?.map((c) => c.cluster).sort(), ["edge-1", "home"]);
      return found!;
    });
    assert.deepEqual(imported.spec?.ports, [{ name: "http", port: 80, protocol: "TCP" }]);
  }

  test("the exported Service deleted: Valid=False NoService on the export, the headless import gone everywhere", async () => {
    await home.core.deleteNamespacedService({ name: "db", namespace: ns });
    const valid = await eventually(async () => {
      const found = (await exportConditions(home, "db")).find((c) => c.type === "Valid");
      assert.equal(found?.status, "False", JSON.stringify(found));
      return found!;
    });
    assert.equal(valid.reason, "NoService");
    for (const [cluster, client] of Object.entries(clients)) {
      await eventually(async () => {
        assert.equal(await readImport(client, "db"), undefined, cluster);
        assert.deepEqual(await importedSlices(client, "db"), [], cluster);
      });
    }
    // CoreDNS follows the import's deletion through its own watch.
    await eventually(() =>
      assert.rejects(resolverOf("edge-1").resolve4(`db.${ns}.svc.clusterset.local`), { code: "ENOTFOUND" }),
    );
  });

  test("the export deleted: the import, its slices and its derived Service are gone everywhere", async () => {
    await home.objects.delete({
      apiVersion: MCS,
      kind: "ServiceExport",
      metadata: { name: "web", namespace: ns },
    });
    for (const [cluster, client] of Object.entries(clients)) {
      await eventually(
        async () => {
          assert.equal(await readImport(client, "web"), undefined, cluster);
          assert.deepEqual(await importedSlices(client, "web"), [], cluster);
          const derived = (await client.core.listNamespacedService({ namespace: ns })).items.filter((s) =>
            s.metadata?.name?.startsWith("web-mcs-"),
          );
          assert.deepEqual(derived, [], cluster);
        },
        { timeoutMs: 60_000 },
      );
    }
    // CoreDNS follows the import's deletion through its own watch.
    await eventually(() =>
      assert.rejects(resolverOf("edge-1").resolve4(`web.${ns}.svc.clusterset.local`), { code: "ENOTFOUND" }),
    );
  });
});

/** An echo server on the process node and its Service (port 80 → 8080), in `ns` of `cluster`. */
async function echoService(client: ClusterClient, name: string): Promise<void> {
  await client.core.createNamespacedPod({ namespace: ns, body: echoPod(name) });
  await client.core.createNamespacedService({
    namespace: ns,
    body: {
      metadata: { name },
      spec: { selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: 8080 as never }] },
    },
  });
  await eventually(
    async () => assert.ok(podReady(await client.core.readNamespacedPod({ namespace: ns, name })), name),
    { timeoutMs: 120_000 },
  );
}

/** Fetches `url` until it answers: DNS, the import and the gateways' filter follow within seconds. */
const fetchUntilAnswered = (url: string) =>
  `for i in $(seq 1 90); do curl -sS --max-time 3 ${url} && exit 0; sleep 1; done; exit 1`;
/** One try, once the name is known to answer its own namespace: REACHED or blocked. */
const fetchOnce = (url: string) =>
  `if curl -sS --max-time 5 ${url}; then echo REACHED; else echo blocked; fi`;

describe("reaching an exported Service by its clusterset name across the gateways", () => {
  const stranger = uniqueName("mcs-stranger");

  before(async () => {
    await Promise.all([echoService(home, "hello-home"), echoService(edge1, "hello-edge")]);
    await Promise.all([exportService(home, "hello-home"), exportService(edge1, "hello-edge")]);
    await Promise.all([
      home.core.createNamespace({ body: { metadata: { name: stranger } } }),
      edge1.core.createNamespace({ body: { metadata: { name: stranger } } }),
    ]);
  });

  after(async () => {
    await Promise.all([
      home.core.deleteNamespace({ name: stranger }).catch(() => {}),
      edge1.core.deleteNamespace({ name: stranger }).catch(() => {}),
    ]);
  });

  test("a pod of the replica in edge-1 reaches home's Service at hello-home.<ns>.svc.clusterset.local", async () => {
    const { log, phase } = await runInPod(
      edge1.core,
      ns,
      "curl-home",
      fetchUntilAnswered(`http://hello-home.${ns}.svc.clusterset.local/from-edge-1`),
      { timeoutMs: 180_000 },
    );
    assert.equal(phase, "Succeeded", log);
    assert.match(log, /Request served by hello-home\n\nGET \/from-edge-1 HTTP\/1\.1/);
  });

  test("a pod of home's namespace reaches the Service exported in edge-1's replica", async () => {
    const { log, phase } = await runInPod(
      home.core,
      ns,
      "curl-edge",
      fetchUntilAnswered(`http://hello-edge.${ns}.svc.clusterset.local/from-home`),
      { timeoutMs: 180_000 },
    );
    assert.equal(phase, "Succeeded", log);
    assert.match(log, /Request served by hello-edge\n\nGET \/from-home HTTP\/1\.1/);
  });

  test("a namespace not offloaded resolves the names but reaches neither Service", async () => {
    // The names are in every namespace's DNS; the gateways let only the namespace and its replica across.
    for (const [client, name, target] of [
      [edge1, "probe-home", "hello-home"],
      [home, "probe-edge", "hello-edge"],
    ] as const) {
      const { log } = await runInPod(
        client.core,
        stranger,
        name,
        `getent hosts ${target}.${ns}.svc.clusterset.local || echo unresolved
         ${fetchOnce(`http://${target}.${ns}.svc.clusterset.local/`)}`,
      );
      assert.doesNotMatch(log, /unresolved/, log);
      assert.match(log, /^blocked$/m, log);
    }
  });
});

describe("what a tenant cannot do with multi-cluster services", () => {
  const tenant = uniqueName("mcs-t");
  const plain = `${tenant}-plain`;
  let mallory: ClusterClient;

  before(async () => {
    const user = await testUser(uniqueName("mallory"));
    mallory = new ClusterClient("mallory", user.kubeConfig);
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name: tenant },
      spec: {
        owners: [{ kind: "User", name: user.name }],
        namespaces: [{ name: "plain" }],
        // RBAC would let mallory write these: what stops her is tenantry's admission.
        users: [
          {
            name: user.name,
            permissions: [
              {
                apiGroups: ["multicluster.x-k8s.io"],
                resources: ["serviceimports"],
                verbs: ["create", "update", "delete"],
              },
              {
                apiGroups: ["discovery.k8s.io"],
                resources: ["endpointslices"],
                verbs: ["create", "update", "delete"],
              },
            ],
          },
        ],
      },
    } as KubernetesObject);
    await eventually(
      async () => {
        await mallory.core.listNamespacedService({ namespace: plain });
        const review = await mallory.objects.create(
          { apiVersion: MCS, kind: "ServiceExport", metadata: { name: "probe", namespace: plain } },
          undefined,
          "All",
        );
        assert.ok(review);
      },
      { timeoutMs: 60_000 },
    );
  });

  after(async () => {
    await home.objects
      .delete({
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name: tenant },
      } as KubernetesObject)
      .catch(() => {});
  });

  test("an export in a namespace that is not offloaded: Valid=False NamespaceNotOffloaded, no import anywhere", async () => {
    await mallory.core.createNamespacedService({
      namespace: plain,
      body: { metadata: { name: "leak" }, spec: { ports: [{ port: 80 }] } },
    });
    await mallory.objects.create({
      apiVersion: MCS,
      kind: "ServiceExport",
      metadata: { name: "leak", namespace: plain },
    });
    const valid = await eventually(async () => {
      const found = (await exportConditions(home, "leak", plain)).find((c) => c.type === "Valid");
      assert.equal(found?.status, "False", JSON.stringify(found));
      return found!;
    });
    assert.equal(valid.reason, "NamespaceNotOffloaded");
    assert.equal(await readImport(home, "leak", plain), undefined);
    for (const edge of ["edge-1", "edge-2"]) {
      const found = await clients[edge]!.core.listNamespace({
        labelSelector: `offloading.tenantry.dev/origin-namespace=${plain}`,
      });
      assert.deepEqual(found.items, [], `${edge} holds no replica of ${plain}`);
    }
  });

  test("a forged ServiceImport or MCS-labelled EndpointSlice is refused by admission, naming the field", async () => {
    await assert.rejects(
      mallory.objects.create({
        apiVersion: MCS,
        kind: "ServiceImport",
        metadata: { name: "web", namespace: plain },
        spec: { type: "ClusterSetIP", ips: ["10.96.0.1"], ports: [{ port: 443, protocol: "TCP" }] },
      } as KubernetesObject),
      (err: Error) => {
        assert.match(
          err.message,
          /serviceimports\.multicluster\.tenantry\.dev|only tenantry's multi-cluster services controller/,
        );
        return true;
      },
    );
    await assert.rejects(
      mallory.kubeConfig.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
        namespace: plain,
        body: {
          metadata: { name: "forged", labels: { [SERVICE_NAME]: "web", [SOURCE_CLUSTER]: "edge-1" } },
          addressType: "IPv4",
          endpoints: [{ addresses: ["10.244.9.9"] }],
        },
      }),
      (err: Error) => {
        assert.match(
          err.message,
          /multicluster\.kubernetes\.io\/service-name.*only tenantry's multi-cluster services controller/s,
        );
        return true;
      },
    );
    // The same slice without the MCS label is an ordinary one: her own Service's endpoints.
    await mallory.kubeConfig.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
      namespace: plain,
      body: {
        metadata: { name: "ordinary", labels: { "kubernetes.io/service-name": "leak" } },
        addressType: "IPv4",
        endpoints: [],
      },
    });
  });

  test("a namespace in edge-1 claiming to be a replica of home's offloaded namespace: its export never reaches home", async () => {
    const impostor = `${ns}-fake`;
    await edge1.core.createNamespace({
      body: {
        metadata: {
          name: impostor,
          labels: {
            "offloading.tenantry.dev/origin-namespace": ns,
            "offloading.tenantry.dev/origin-cluster-id": "home",
          },
        },
      },
    });
    try {
      await edge1.core.createNamespacedService({
        namespace: impostor,
        body: { metadata: { name: "sneaky" }, spec: { ports: [{ port: 80 }] } },
      });
      await exportService(edge1, "sneaky", impostor);
      // A later export of home's own is imported: the controller has seen everything before it.
      await serviceWithEndpoints(home, "after-sneaky", ["10.244.7.30"]);
      await exportService(home, "after-sneaky");
      await eventually(async () => assert.ok(await readImport(home, "after-sneaky")), { timeoutMs: 60_000 });
      assert.equal(await readImport(home, "sneaky"), undefined);
      assert.equal(await readImport(clients["edge-2"]!, "sneaky"), undefined);
    } finally {
      await edge1.core.deleteNamespace({ name: impostor }).catch(() => {});
    }
  });
});
