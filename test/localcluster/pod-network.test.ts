/**
 * The local clusters' pod network: pods in namespaces of their own on the process node's bridge,
 * Services through kube-proxy (nftables), names through CoreDNS; two clusters whose pod and
 * service CIDRs are the same told apart by their mapped addresses; and nothing left on the machine
 * after a stop or a crash.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, DiscoveryV1Api, KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { ClusterHarness, type ClusterState, LOCAL_IMAGES } from "../../src/localcluster/index.js";
import { readRecordedNetwork } from "../../src/localcluster/process-node/network/claims.js";
import { run } from "../../src/localcluster/process-node/network/commands.js";
import { mappedAddress, networkPlan } from "../../src/localcluster/process-node/network/plan.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { podReady, processNodePod, runInPod } from "../support/process-node.js";

const echoPod = (name: string, labels: Record<string, string> = { app: name }) =>
  processNodePod(
    name,
    [
      {
        name: "echo",
        image: LOCAL_IMAGES.echo,
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 as never }, periodSeconds: 1 },
      },
    ],
    {},
    labels,
  );

async function readyPod(api: CoreV1Api, namespace: string, name: string): Promise<V1Pod> {
  return eventually(
    async () => {
      const pod = await api.readNamespacedPod({ namespace, name });
      assert.ok(podReady(pod), `${name} is not Ready: ${JSON.stringify(pod.status?.containerStatuses)}`);
      return pod;
    },
    { timeoutMs: 120_000 },
  );
}

const service = (name: string) => ({
  metadata: { name },
  spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 as never }] },
});

describe("pod network of the shared home cluster", () => {
  const namespace = uniqueName("podnet");
  let api: CoreV1Api;

  before(async () => {
    api = testKubeConfig("home").makeApiClient(CoreV1Api);
    await api.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
  });

  test("a pod's address is in its EndpointSlice; another pod reaches its Service by name", async () => {
    await api.createNamespacedPod({ namespace, body: echoPod("web") });
    await api.createNamespacedService({ namespace, body: service("web") });
    const pod = await readyPod(api, namespace, "web");
    const discovery = testKubeConfig("home").makeApiClient(DiscoveryV1Api);
    await eventually(async () => {
      const slices = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: "kubernetes.io/service-name=web",
      });
      const addresses = slices.items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
      assert.deepEqual(addresses, [pod.status?.podIP]);
    });
    const { log, phase } = await runInPod(
      api,
      namespace,
      "client",
      // kube-proxy programs the Service shortly after its EndpointSlice: until then the connection
      // fails at once (refused, or unreachable, which curl's own --retry does not retry), so retry it.
      `for i in $(seq 1 30); do curl -sS --max-time 10 http://web.${namespace}.svc.cluster.local/by-name && break; sleep 1; done; echo; curl -sS --max-time 10 http://web/short-name`,
    );
    assert.equal(phase, "Succeeded", log);
    assert.match(log, /Request served by web\n\nGET \/by-name HTTP\/1\.1/);
    assert.match(log, /GET \/short-name HTTP\/1\.1/);
  });
});

describe("two clusters with the same pod and service CIDRs", () => {
  let dir: string;
  let harness: ClusterHarness;
  let states: ClusterState[];
  const podCidr = "10.201.0.0/24";
  const apiOf = (state: ClusterState) => {
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    return kc.makeApiClient(CoreV1Api);
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-overlap-"));
    harness = new ClusterHarness({ dir, log: () => {} });
    states = await harness.up([
      { name: "ovl-a", nodes: 1, podCidr },
      { name: "ovl-b", nodes: 1, podCidr },
    ]);
  });
  after(async () => {
    await harness.reset().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  test("identical pod IPs are told apart by each cluster's mapped address, and each cluster's names are its own", async () => {
    const pods: V1Pod[] = [];
    for (const state of states) {
      const api = apiOf(state);
      await api.createNamespacedPod({
        namespace: "default",
        body: echoPod(`in-${state.name}`, { app: "web" }),
      });
      await api.createNamespacedService({ namespace: "default", body: service("web") });
      pods.push(await readyPod(api, "default", `in-${state.name}`));
    }
    assert.equal(pods[0]!.status?.podIP, pods[1]!.status?.podIP, "the same address in both clusters");
    for (const [i, state] of states.entries()) {
      const network = (await readRecordedNetwork(join(dir, state.name)))!;
      const plan = networkPlan(network.index, network.podCidr);
      const mapped = mappedAddress(plan, pods[i]!.status!.podIP!)!;
      const text = await (await fetch(`http://${mapped}:8080/`)).text();
      assert.match(
        text,
        new RegExp(`^Request served by in-${state.name}\\n`),
        `${mapped} is ${state.name}'s pod`,
      );
      // Retried until kube-proxy has programmed the new Service (before, the connection fails at once).
      const { log } = await runInPod(
        apiOf(state),
        "default",
        "client",
        "for i in $(seq 1 30); do curl -sS --max-time 10 http://web/ && break; sleep 1; done",
      );
      assert.match(
        log,
        new RegExp(`^Request served by in-${state.name}\\n`),
        `${state.name}'s Service is its own`,
      );
    }
  });

  test("a stopped cluster, and one whose processes were all killed, leave no namespace, link, route or table", async () => {
    const [a, b] = states as [ClusterState, ClusterState];
    const indexes = await Promise.all(
      [a, b].map(async (s) => (await readRecordedNetwork(join(dir, s.name)))!.index),
    );
    // ovl-b crashes: every process of the cluster, its pods' included, is killed at once.
    const recorded = JSON.parse(readFileSync(join(dir, b.name, "state.json"), "utf8")) as ClusterState;
    for (const proc of recorded.processes) process.kill(proc.pid, "SIGKILL");
    await harness.down([a.name, b.name]);
    const [namespaces, links, routes, tables] = await Promise.all([
      run("ip", ["netns", "list"]),
      run("ip", ["-o", "link", "show"]),
      run("ip", ["route", "show"]),
      run("nft", ["list", "tables"]),
    ]);
    for (const index of indexes) {
      assert.ok(
        !new RegExp(`^tnr${index}-`, "m").test(namespaces),
        `namespaces of network ${index}: ${namespaces}`,
      );
      assert.ok(!links.includes(`tnr${index}h`), `link of network ${index}`);
      assert.ok(!routes.includes(`tnr${index}h`), `routes of network ${index}`);
      assert.ok(!tables.includes(`tenantry-net-${index}`), `table of network ${index}`);
    }
  });
});
