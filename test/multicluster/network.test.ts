/**
 * The pod network between peered clusters (Liqo thesis, ch. 5) on the shared topology (home
 * consumes edge-1): each cluster's gateway pod runs wireguard-go on a TUN device, the two exchange
 * public keys and endpoints through the peering, each sees the other's pods in a range of its own
 * choosing, and only pods of an offloaded namespace and of its replica talk across.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, DiscoveryV1Api, type V1Pod } from "@kubernetes/client-node";
import pino from "pino";
import { startEmbeddedTenantry } from "../../src/app/embedded.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import { ClusterHarness, type ClusterState, PROCESS_NODE_NAME } from "../../src/localcluster/index.js";
import { readRecordedNetwork } from "../../src/localcluster/process-node/network/claims.js";
import { run } from "../../src/localcluster/process-node/network/commands.js";
import {
  GATEWAY_NAME,
  GATEWAY_OBJECTS,
  GATEWAY_PORT,
  peerClusters,
  REMAPS_CONFIGMAP,
  remapAddress,
  unpeerClusters,
} from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { podReady, runInPod } from "../support/process-node.js";
import { adminClient, echoPod, tenantryOn } from "./support.js";

const NAMESPACE = "tenantry-system";
const MCS = "multicluster.x-k8s.io/v1alpha1";
const api = {
  home: testKubeConfig("home").makeApiClient(CoreV1Api),
  edge: testKubeConfig("edge-1").makeApiClient(CoreV1Api),
};
const home = adminClient("home");
const edge1 = adminClient("edge-1");

async function readyPod(cluster: CoreV1Api, namespace: string, name: string): Promise<V1Pod> {
  return eventually(
    async () => {
      const pod = await cluster.readNamespacedPod({ namespace, name });
      assert.ok(
        podReady(pod),
        `${namespace}/${name} is not Ready: ${JSON.stringify(pod.status?.containerStatuses)}`,
      );
      return pod;
    },
    { timeoutMs: 120_000 },
  );
}

async function podCidrOf(cluster: CoreV1Api): Promise<string> {
  return (await cluster.readNode({ name: PROCESS_NODE_NAME })).spec!.podCIDR!;
}

/** The range `cluster` sees its peer `peerId`'s pods in (its network controller's choice). */
async function remapOf(cluster: CoreV1Api, peerId: string): Promise<string> {
  return eventually(
    async () => {
      const map = await cluster.readNamespacedConfigMap({ name: REMAPS_CONFIGMAP, namespace: NAMESPACE });
      const range = map.data?.[peerId];
      assert.ok(range, `no range for ${peerId} yet: ${JSON.stringify(map.data)}`);
      return range;
    },
    { timeoutMs: 120_000 },
  );
}

/** A script that fetches `url` until it answers (the gateway learns of new pods within seconds). */
const fetchUntilAnswered = (url: string) =>
  `for i in $(seq 1 60); do curl -sS --max-time 3 ${url} && exit 0; sleep 1; done; exit 1`;

/** A script that first proves its pod reaches `allowed` across, then shows `blocked` is not reached. */
const reachesOnly = (allowed: string, blocked: string) =>
  `for i in $(seq 1 60); do curl -sS --max-time 3 -o /dev/null ${allowed} && break; sleep 1; done
   curl -sS --max-time 3 -o /dev/null ${allowed} || { echo control-failed; exit 1; }
   if curl -sS --max-time 4 ${blocked}; then echo REACHED; else echo blocked; fi`;

async function offload(namespace: string): Promise<void> {
  await home.core.createNamespace({ body: { metadata: { name: namespace } } });
  await home.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace },
    spec: {
      namespaceMappingStrategy: "EnforceSameName",
      podOffloadingStrategy: "LocalAndRemote",
      clusterSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "tenantry.dev/security-policy", operator: "In", values: ["strict"] }] },
        ],
      },
    },
  } as never);
  await eventually(() => edge1.core.readNamespace({ name: namespace }), { timeoutMs: 60_000 });
}

/** Network namespaces of the machine (every pod's, every node's). */
async function machineNamespaces(): Promise<string[]> {
  return (await run("ip", ["netns", "list"]))
    .split("\n")
    .map((line) => line.split(" ")[0]!)
    .filter(Boolean)
    .sort();
}

/** The network namespace of `cluster`'s gateway pod on this machine (where its UDP socket lives). */
async function gatewayNetns(cluster: CoreV1Api, clusterDir: string): Promise<string> {
  const network = (await readRecordedNetwork(clusterDir))!;
  const [gateway] = (
    await cluster.listNamespacedPod({
      namespace: NAMESPACE,
      labelSelector: `app.kubernetes.io/name=${GATEWAY_NAME}`,
    })
  ).items.filter((p) => !p.metadata?.deletionTimestamp);
  assert.ok(gateway, "the cluster runs a gateway pod");
  return `tnr${network.index}-${gateway.metadata!.uid!.replace(/-/g, "").slice(0, 8)}`;
}

/** A table of the test's own in the gateway's namespace dropping the tunnel's UDP both ways. */
const CUT_TABLE = "tenantry-test-cut";
const cutRules = `table ip ${CUT_TABLE} {
\tchain output { type filter hook output priority filter; policy accept; udp dport ${GATEWAY_PORT} drop; udp sport ${GATEWAY_PORT} drop; }
\tchain input { type filter hook input priority filter; policy accept; udp dport ${GATEWAY_PORT} drop; udp sport ${GATEWAY_PORT} drop; }
}
`;

describe("pods of peered clusters across the gateways", () => {
  const offloaded = uniqueName("net-a");
  const offloadedToo = uniqueName("net-b");
  const local = uniqueName("net-local");
  const other = uniqueName("net-other");
  const addresses: Record<string, string> = {};

  before(async () => {
    await Promise.all([offload(offloaded), offload(offloadedToo)]);
    await home.core.createNamespace({ body: { metadata: { name: local } } });
    await edge1.core.createNamespace({ body: { metadata: { name: other } } });
    const pods: [keyof typeof api, string, string][] = [
      ["home", offloaded, "web-home"],
      ["home", local, "web-local"],
      ["edge", offloaded, "web-edge"],
      ["edge", offloadedToo, "web-edge-b"],
      ["edge", other, "web-other"],
    ];
    await Promise.all(
      pods.map(([cluster, ns, name]) =>
        api[cluster].createNamespacedPod({ namespace: ns, body: echoPod(name) }),
      ),
    );
    const [homeCidr, edgeCidr] = await Promise.all([podCidrOf(api.home), podCidrOf(api.edge)]);
    const [homeSeesEdge, edgeSeesHome] = await Promise.all([
      remapOf(api.home, tenantryOn("edge-1").clusterId),
      remapOf(api.edge, tenantryOn("home").clusterId),
    ]);
    for (const [cluster, ns, name] of pods) {
      const ip = (await readyPod(api[cluster], ns, name)).status!.podIP!;
      // Where the other cluster dials this pod.
      addresses[name] =
        cluster === "home"
          ? remapAddress(ip, homeCidr, edgeSeesHome)!
          : remapAddress(ip, edgeCidr, homeSeesEdge)!;
    }
  });

  after(async () => {
    await Promise.all([
      ...[offloaded, offloadedToo, local].map((name) => home.core.deleteNamespace({ name }).catch(() => {})),
      edge1.core.deleteNamespace({ name: other }).catch(() => {}),
    ]);
  });

  test("each gateway runs wireguard-go and has shaken hands with its peer; its key stays in its own Secret", async () => {
    for (const [cluster, peer] of [
      [api.home, "edge-1"],
      [api.edge, "home"],
    ] as const) {
      const status = await eventually(
        async () => {
          const map = await cluster.readNamespacedConfigMap({
            name: GATEWAY_OBJECTS.status,
            namespace: NAMESPACE,
          });
          const parsed = JSON.parse(map.data?.["status.json"] ?? "{}") as {
            handshakes?: Record<string, number>;
          };
          assert.ok(
            Object.values(parsed.handshakes ?? {}).some((t) => t > 0),
            `no handshake with ${peer} yet: ${JSON.stringify(parsed)}`,
          );
          return parsed;
        },
        { timeoutMs: 120_000 },
      );
      assert.ok(status);
      const secret = await cluster.readNamespacedSecret({
        name: GATEWAY_OBJECTS.keySecret,
        namespace: NAMESPACE,
      });
      assert.ok(secret.data?.privateKey, "the gateway wrote its key");
    }
  });

  test("a home pod of the offloaded namespace reaches its replica's pod in edge-1 at the remapped address, and back", async () => {
    const there = await runInPod(
      api.home,
      offloaded,
      "client-home",
      fetchUntilAnswered(`http://${addresses["web-edge"]}:8080/from-home`),
    );
    assert.equal(there.phase, "Succeeded", there.log);
    assert.match(there.log, /Request served by web-edge\n\nGET \/from-home HTTP\/1\.1/);
    const back = await runInPod(
      api.edge,
      offloaded,
      "client-edge",
      fetchUntilAnswered(`http://${addresses["web-home"]}:8080/from-edge`),
    );
    assert.equal(back.phase, "Succeeded", back.log);
    assert.match(back.log, /Request served by web-home\n\nGET \/from-edge HTTP\/1\.1/);
  });

  test("nothing else crosses: a namespace not offloaded, another namespace's replica, a namespace of no peer", async () => {
    // From the replica in edge-1: its own namespace's home pod answers, a home pod of a namespace never offloaded does not.
    const toLocal = await runInPod(
      api.edge,
      offloaded,
      "probe-local",
      reachesOnly(`http://${addresses["web-home"]}:8080/`, `http://${addresses["web-local"]}:8080/`),
    );
    assert.match(toLocal.log, /^blocked$/m, toLocal.log);
    // From home's second offloaded namespace: its own replica answers, the first namespace's does not.
    const toOtherReplica = await runInPod(
      api.home,
      offloadedToo,
      "probe-replica",
      reachesOnly(`http://${addresses["web-edge-b"]}:8080/`, `http://${addresses["web-edge"]}:8080/`),
    );
    assert.match(toOtherReplica.log, /^blocked$/m, toOtherReplica.log);
    // edge-1's namespace of no peer: its pod is not reached from home, nor does it reach home.
    const fromOther = await runInPod(
      api.edge,
      other,
      "probe-other",
      `if curl -sS --max-time 4 http://${addresses["web-home"]}:8080/; then echo REACHED; else echo blocked; fi`,
    );
    assert.match(fromOther.log, /^blocked$/m, fromOther.log);
    const toOther = await runInPod(
      api.home,
      offloaded,
      "probe-to-other",
      reachesOnly(`http://${addresses["web-edge"]}:8080/`, `http://${addresses["web-other"]}:8080/`),
    );
    assert.match(toOther.log, /^blocked$/m, toOther.log);
  });

  test("the gateways' UDP path cut and restored: traffic stops, then resumes without a hand", async () => {
    const netns = await gatewayNetns(api.home, join(testEnvironment().dir, "home"));
    const url = `http://${addresses["web-edge"]}:8080/`;
    const before = await runInPod(api.home, offloaded, "cut-control", fetchUntilAnswered(url));
    assert.equal(before.phase, "Succeeded", before.log);
    await run("ip", ["netns", "exec", netns, "nft", "-f", "-"], cutRules);
    try {
      // The flow seen before may live on in conntrack; a new connection has no tunnel.
      const during = await runInPod(
        api.home,
        offloaded,
        "cut-probe",
        `sleep 2; if curl -sS --max-time 5 -o /dev/null ${url}; then echo REACHED; else echo blocked; fi`,
      );
      assert.match(during.log, /^blocked$/m, during.log);
    } finally {
      await run("ip", ["netns", "exec", netns, "nft", "delete", "table", "ip", CUT_TABLE]);
    }
    const after = await runInPod(api.home, offloaded, "cut-after", fetchUntilAnswered(`${url}after-cut`), {
      timeoutMs: 180_000,
    });
    assert.equal(after.phase, "Succeeded", after.log);
    assert.match(after.log, /Request served by web-edge\n\nGET \/after-cut HTTP\/1\.1/);
  });

  test("the gateway's pod killed: a new one takes its key and traffic resumes without a hand", async () => {
    const [gateway] = (
      await api.home.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: `app.kubernetes.io/name=${GATEWAY_NAME}`,
      })
    ).items;
    assert.ok(gateway, "home runs a gateway pod");
    await api.home.deleteNamespacedPod({
      namespace: NAMESPACE,
      name: gateway.metadata!.name!,
      gracePeriodSeconds: 0,
    });
    const again = await runInPod(
      api.home,
      offloaded,
      "client-again",
      fetchUntilAnswered(`http://${addresses["web-edge"]}:8080/again`),
      {
        timeoutMs: 180_000,
      },
    );
    assert.equal(again.phase, "Succeeded", again.log);
    assert.match(again.log, /Request served by web-edge/);
  });

  test("nothing is left on the machine: every pod network namespace of both clusters belongs to a pod that exists", async () => {
    await Promise.all([
      ...[offloaded, offloadedToo, local].map((name) => home.core.deleteNamespace({ name }).catch(() => {})),
      edge1.core.deleteNamespace({ name: other }).catch(() => {}),
    ]);
    for (const [cluster, name] of [
      [api.home, "home"],
      [api.edge, "edge-1"],
    ] as const) {
      const network = (await readRecordedNetwork(join(testEnvironment().dir, name)))!;
      await eventually(
        async () => {
          const pods = (await cluster.listPodForAllNamespaces()).items;
          const ids = new Set(pods.map((p) => p.metadata!.uid!.replace(/-/g, "").slice(0, 8)));
          const prefix = `tnr${network.index}-`;
          const orphans = (await machineNamespaces())
            .filter((n) => n.startsWith(prefix) && n !== `${prefix}node`)
            .filter((n) => !ids.has(n.slice(prefix.length)));
          assert.deepEqual(orphans, [], `${name}: network namespaces of no pod`);
          // The gateway stops admitting the deleted namespaces: their policies are gone.
          const config = await cluster.readNamespacedConfigMap({
            name: "tenantry-gateway-config",
            namespace: NAMESPACE,
          });
          assert.doesNotMatch(config.data?.["config.json"] ?? "", new RegExp(`${offloaded}|${offloadedToo}`));
        },
        { timeoutMs: 120_000 },
      );
    }
  });
});

describe("two clusters with the same podCIDR, peered and unpeered", () => {
  const podCidr = "10.202.0.0/24";
  let dir: string;
  let harness: ClusterHarness;
  const stops: (() => Promise<unknown>)[] = [];
  let a: ClusterClient;
  let b: ClusterClient;
  let states: ClusterState[];
  const ns = "shop";

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-overlap-net-"));
    harness = new ClusterHarness({ dir, log: () => {} });
    states = await harness.up([
      { name: "net-a", nodes: 1, podCidr },
      { name: "net-b", nodes: 1, podCidr },
    ]);
    for (const state of states) {
      const logger = pino(
        { level: "info" },
        pino.destination({ dest: join(dir, `tenantry-${state.name}.log`) }),
      );
      const running = await startEmbeddedTenantry(state, logger);
      stops.push(() => running.stop());
    }
    [a, b] = states.map((s) => loadClusterClient(s.name, s.kubeconfig)) as [ClusterClient, ClusterClient];
    await peerClusters({
      consumer: a,
      provider: b,
      namespaceQuota: 5,
      resources: { cpu: "8", memory: "8Gi", pods: "50" },
    });
    await a.core.createNamespace({ body: { metadata: { name: ns } } });
    await a.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace: ns },
      spec: { namespaceMappingStrategy: "EnforceSameName", podOffloadingStrategy: "LocalAndRemote" },
    } as never);
    await eventually(() => b.core.readNamespace({ name: ns }), { timeoutMs: 120_000 });
  });

  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    await harness.reset().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  test("a pod reaches the peer's pod at the remapped address though both have the same address", async () => {
    await b.core.createNamespacedPod({ namespace: ns, body: echoPod("web-b") });
    const [server, bId] = await Promise.all([
      readyPod(b.core, ns, "web-b"),
      b.core.readNamespacedConfigMap({ name: "tenantry-cluster-identity", namespace: NAMESPACE }),
    ]);
    const range = await remapOf(a.core, bId.data!.clusterId!);
    const address = remapAddress(server.status!.podIP!, podCidr, range)!;
    const { log, phase } = await runInPod(
      a.core,
      ns,
      "client-a",
      fetchUntilAnswered(`http://${address}:8080/overlap`),
    );
    assert.equal(phase, "Succeeded", log);
    assert.match(log, /Request served by web-b\n\nGET \/overlap HTTP\/1\.1/);
  });

  test("a Service exported in the provider's replica answers by its clusterset name in the consumer", async () => {
    await b.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: "web-b" },
        spec: { selector: { app: "web-b" }, ports: [{ name: "http", port: 80, targetPort: 8080 as never }] },
      },
    });
    await b.objects.create({
      apiVersion: MCS,
      kind: "ServiceExport",
      metadata: { name: "web-b", namespace: ns },
    });
    const { log, phase } = await runInPod(
      a.core,
      ns,
      "client-mcs",
      fetchUntilAnswered(`http://web-b.${ns}.svc.clusterset.local/by-name`),
      { timeoutMs: 180_000 },
    );
    assert.equal(phase, "Succeeded", log);
    assert.match(log, /Request served by web-b\n\nGET \/by-name HTTP\/1\.1/);
  });

  test("unpeering removes the peer from both gateways: key, route, remapping rules and range; and its imports", async () => {
    await unpeerClusters({ consumer: a, provider: b });
    await eventually(
      async () => {
        const imports = await a.objects.list(MCS, "ServiceImport", ns);
        assert.deepEqual(
          imports.items.map((i) => i.metadata?.name),
          [],
          "the provider's export is no longer imported",
        );
        const slices = await a.kubeConfig.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
          namespace: ns,
          labelSelector: "multicluster.kubernetes.io/service-name",
        });
        assert.deepEqual(slices.items, [], "nor are its endpoints");
      },
      { timeoutMs: 120_000 },
    );
    for (const [client, state] of [
      [a, states[0]!],
      [b, states[1]!],
    ] as const) {
      const network = (await readRecordedNetwork(join(dir, state.name)))!;
      await eventually(
        async () => {
          const config = JSON.parse(
            (
              await client.core.readNamespacedConfigMap({
                name: "tenantry-gateway-config",
                namespace: NAMESPACE,
              })
            ).data!["config.json"]!,
          ) as { peers: unknown[] };
          assert.deepEqual(config.peers, [], `${state.name}: peers`);
          const status = JSON.parse(
            (
              await client.core.readNamespacedConfigMap({
                name: GATEWAY_OBJECTS.status,
                namespace: NAMESPACE,
              })
            ).data!["status.json"]!,
          ) as { handshakes: Record<string, number> };
          assert.deepEqual(status.handshakes, {}, `${state.name}: wireguard-go still has a peer`);
          const remaps = await client.core.readNamespacedConfigMap({
            name: REMAPS_CONFIGMAP,
            namespace: NAMESPACE,
          });
          assert.deepEqual(remaps.data ?? {}, {}, `${state.name}: ranges`);
          const routes = await run("ip", ["netns", "exec", `tnr${network.index}-node`, "ip", "route"]);
          assert.doesNotMatch(routes, /^10\.24\d\./m, `${state.name}: node routes`);
          const netns = await gatewayNetns(client.core, join(dir, state.name));
          const rules = await run("ip", [
            "netns",
            "exec",
            netns,
            "nft",
            "list",
            "table",
            "ip",
            "tenantry-gateway",
          ]);
          assert.doesNotMatch(rules, /prefix to/, `${state.name}: remapping rules`);
          const gatewayRoutes = await run("ip", ["netns", "exec", netns, "ip", "route"]);
          assert.doesNotMatch(gatewayRoutes, /dev wg0/, `${state.name}: tunnel routes`);
        },
        { timeoutMs: 120_000 },
      );
    }
  });
});
