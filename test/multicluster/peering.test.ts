import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { V1Node, V1Secret } from "@kubernetes/client-node";
import {
  KUBECONFIG_KEY,
  NODE_LEASE_NAMESPACE,
  peerSecretName,
  VIRTUAL_NODE_TAINT,
} from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import {
  adminClient,
  exists,
  kubeconfigPath,
  nodeReady,
  readNode,
  readPeering,
  tempDir,
  tenantry,
  tenantryOn,
  writeTemp,
} from "./support.js";

/** edge-1 peers with home here: home's own peerings (with edge-1 and edge-2) are the shared offloading topology. */
const consumer = adminClient("edge-1");
const provider = adminClient("home");

describe("peering edge-1 with home", () => {
  const dir = tempDir("peering");
  let peerConfig: string;
  const other = uniqueName("other");
  const mine = [uniqueName("peer-a"), uniqueName("peer-b")];

  before(async () => {
    const started = Date.now();
    const result = await tenantry([
      "peer",
      "--consumer",
      "edge-1",
      "--provider",
      "home",
      "--namespaces",
      "2",
      "--cpu",
      "4",
      "--memory",
      "8Gi",
      "--pods",
      "20",
      "-o",
      "json",
    ]);
    const peerSeconds = (Date.now() - started) / 1000;
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout) as {
      peering: string;
      tenant: string;
      username: string;
      seconds: number;
      timingsMs: Record<string, number>;
    };
    assert.equal(summary.peering, "home");
    assert.equal(summary.tenant, "peer-edge-1");
    assert.equal(summary.username, `tenantry-peer:${tenantryOn("edge-1").clusterId}`);
    process.stderr.write(
      `tenantry peer edge-1 → home: ${summary.seconds}s in the command (${JSON.stringify(summary.timingsMs)}), ${peerSeconds.toFixed(1)}s with the CLI's start\n`,
    );
    const secret: V1Secret = await consumer.core.readNamespacedSecret({
      name: peerSecretName("home"),
      namespace: "tenantry-system",
    });
    peerConfig = writeTemp(
      dir,
      "peer.kubeconfig",
      Buffer.from(secret.data![KUBECONFIG_KEY]!, "base64").toString(),
    );
    // Another tenant in home, which the peer must not touch.
    await provider.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name: other },
      spec: { owners: [{ kind: "User", name: `${other}-owner` }], namespaces: [{ name: "app" }] },
    } as never);
    await eventually(async () => assert.ok(await exists(provider, "v1", "Namespace", `${other}-app`)));
  });

  after(async () => {
    await provider.objects
      .delete({ apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name: other } })
      .catch(() => {});
    // Left behind only when the unpeer test failed.
    await tenantry(["unpeer", "--consumer", "edge-1", "--provider", "home"]);
  });

  test("the Peering is Ready and the virtual node shows home's labels, the granted capacity and the taint", async () => {
    const peering = await readPeering(consumer, "home");
    assert.ok(peering);
    const ready = peering.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "True", JSON.stringify(peering.status));
    assert.equal(ready?.observedGeneration, peering.metadata!.generation);
    assert.equal(peering.spec.remoteClusterId, tenantryOn("home").clusterId);
    assert.equal(peering.status?.conditions?.find((c) => c.type === "Healthy")?.status, "True");

    const node = await readNode(consumer, "tenantry-home");
    assert.ok(node, "virtual node tenantry-home");
    const labels = node.metadata!.labels!;
    assert.equal(labels["topology.kubernetes.io/region"], "eu-west");
    assert.equal(labels["tenantry.dev/provider"], "onprem");
    assert.equal(labels["tenantry.dev/security-policy"], "standard");
    assert.equal(labels["tenantry.dev/type"], "virtual-node");
    assert.equal(labels["tenantry.dev/remote-cluster-id"], tenantryOn("home").clusterId);
    assert.deepEqual(node.status?.capacity, { cpu: "4", memory: "8Gi", pods: "20" });
    assert.deepEqual(node.status?.allocatable, { cpu: "4", memory: "8Gi", pods: "20" });
    assert.deepEqual(
      node.spec?.taints
        ?.filter((t) => t.key === VIRTUAL_NODE_TAINT.key)
        .map((t) => ({ key: t.key, value: t.value, effect: t.effect })),
      [{ key: "virtual-node.tenantry.dev/not-allowed", value: "true", effect: "NoExecute" }],
    );
    assert.equal(nodeReady(node)?.status, "True");
    assert.equal(node.metadata!.ownerReferences?.[0]?.kind, "Peering");
    assert.equal(node.metadata!.ownerReferences?.[0]?.uid, peering.metadata!.uid);

    const nodes = await kubectl(kubeconfigPath("edge-1"), ["get", "nodes"]);
    assert.equal(nodes.code, 0, nodes.stderr);
    assert.match(nodes.stdout, /^tenantry-home\s+Ready\s/m);
  });

  test("KWOK leaves the virtual node alone; its Lease is renewed and its heartbeat stays ours", async () => {
    const node = await readNode(consumer, "tenantry-home");
    assert.equal(node?.metadata?.annotations?.["kwok.x-k8s.io/node"], undefined);
    // KWOK would add its own conditions (MemoryPressure, DiskPressure …) and addresses.
    assert.deepEqual(
      node?.status?.conditions?.map((c) => c.type),
      ["Ready"],
    );
    assert.equal(nodeReady(node)?.reason, "PeerReady");
    // Steady state writes little: the Lease every probe, status only on change or every 30 s.
    const peering0 = (await readPeering(consumer, "home"))!;
    const node0 = (await readNode(consumer, "tenantry-home"))!;
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const peering1 = (await readPeering(consumer, "home"))!;
    const node1 = (await readNode(consumer, "tenantry-home"))!;
    if (peering1.metadata!.resourceVersion !== peering0.metadata!.resourceVersion) {
      assert.notEqual(
        peering1.status?.lastHeartbeat,
        peering0.status?.lastHeartbeat,
        "Peering written without news",
      );
    }
    // kube-controller-manager writes nodes too (its node lifecycle controller, taints): only
    // tenantry's own writes must bring news.
    if (writesOtherThanTheCluster(node1) !== writesOtherThanTheCluster(node0)) {
      assert.notEqual(
        String(nodeReady(node1)?.lastHeartbeatTime),
        String(nodeReady(node0)?.lastHeartbeatTime),
        `Node written without news: ${writesOtherThanTheCluster(node0)} → ${writesOtherThanTheCluster(node1)}`,
      );
    }
    const first = await consumer.coordination.readNamespacedLease({
      name: "tenantry-home",
      namespace: NODE_LEASE_NAMESPACE,
    });
    await eventually(
      async () => {
        const lease = await consumer.coordination.readNamespacedLease({
          name: "tenantry-home",
          namespace: NODE_LEASE_NAMESPACE,
        });
        assert.ok(new Date(lease.spec!.renewTime!).getTime() > new Date(first.spec!.renewTime!).getTime());
        assert.equal(lease.metadata?.ownerReferences?.[0]?.kind, "Node");
      },
      { timeoutMs: 15_000 },
    );
  });

  test("tenantry peer status lists the peering", async () => {
    const status = await tenantry(["peer", "status", "--consumer", "edge-1"]);
    assert.equal(status.code, 0, status.stderr);
    const [header, ...rows] = status.stdout.trim().split("\n");
    assert.match(header!, /^PEER\s+REMOTE ID\s+LABELS\s+READY\s+CAPACITY\s+LAST HEARTBEAT$/);
    const row = rows.find((r) => r.startsWith("home "));
    assert.ok(row, status.stdout);
    assert.match(row, new RegExp(tenantryOn("home").clusterId));
    assert.match(row, /tenantry\.dev\/security-policy=standard/);
    assert.match(row, /\sTrue\s/);
    assert.match(row, /cpu=4,memory=8Gi,pods=20/);
    assert.match(row, /\d+s ago$/);
    const json = await tenantry(["peer", "status", "--consumer", "edge-1", "-o", "json"]);
    const parsed = JSON.parse(json.stdout) as { name: string; ready: string }[];
    assert.equal(parsed.find((p) => p.name === "home")?.ready, "True");
  });

  test("least privilege: with the stored credentials kubectl may only work inside the peer's own tenant", async () => {
    const as = (args: string[], input?: string) => kubectl(peerConfig, args, input);
    const whoami = await as([
      "auth",
      "whoami",
      "-o",
      "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ]);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.equal(whoami.stdout, `tenantry-peer:${tenantryOn("edge-1").clusterId} ["system:authenticated"]`);

    const forbidden = async (args: string[], pattern: RegExp) => {
      const result = await as(args);
      assert.notEqual(result.code, 0, `${args.join(" ")} should fail: ${result.stdout}`);
      assert.match(result.stderr, pattern, args.join(" "));
    };
    await forbidden(["get", "namespaces"], /Forbidden.*cannot list resource "namespaces"/);
    await forbidden(["get", "nodes"], /forbidden/i);
    await forbidden(["-n", "kube-system", "get", "secrets"], /forbidden/i);
    await forbidden(["-n", "tenantry-system", "get", "secrets"], /forbidden/i);
    await forbidden(["-n", "tenantry-system", "get", "configmaps"], /forbidden/i);
    await forbidden(["-n", "tenantry-system", "get", "configmap", "tenantry-webhook-tls"], /forbidden/i);
    // The network: its own exchange ConfigMap and the provider's public gateway facts, nothing more.
    for (const name of ["tenantry-network-peer-edge-2", "tenantry-gateway-config", "tenantry-network-remaps"])
      await forbidden(["-n", "tenantry-system", "get", "configmap", name], /forbidden/i);
    await forbidden(["-n", "tenantry-system", "get", "secret", "tenantry-gateway-key"], /forbidden/i);
    await forbidden(
      [
        "-n",
        "tenantry-system",
        "patch",
        "configmap",
        "tenantry-network-public",
        "--type=merge",
        "-p",
        '{"data":{"x":"y"}}',
      ],
      /forbidden/i,
    );
    const exchange = await as([
      "-n",
      "tenantry-system",
      "get",
      "configmap",
      "tenantry-network-peer-edge-1",
      "-o",
      "name",
    ]);
    assert.equal(exchange.code, 0, exchange.stderr);
    await forbidden(
      ["create", "clusterrolebinding", uniqueName("mine"), "--clusterrole=cluster-admin", "--user=x"],
      /forbidden/i,
    );
    const identity = await as([
      "-n",
      "tenantry-system",
      "get",
      "configmap",
      "tenantry-cluster-identity",
      "-o",
      "jsonpath={.data.clusterName}",
    ]);
    assert.equal(identity.code, 0, identity.stderr);
    assert.equal(identity.stdout, "home");

    // Namespaces: up to the quota (2), not one more.
    for (const name of mine) {
      const created = await as(["create", "namespace", name]);
      assert.equal(created.code, 0, created.stderr);
    }
    await forbidden(["create", "namespace", uniqueName("peer-c")], /namespace quota|namespaceQuota is 2/);

    // Another tenant's namespace: nothing.
    await forbidden(["-n", `${other}-app`, "get", "configmaps"], /forbidden/i);
    await forbidden(["-n", `${other}-app`, "create", "configmap", "x", "--from-literal=a=b"], /forbidden/i);
    await forbidden(["delete", "namespace", `${other}-app`], /forbidden/i);
    await forbidden(["label", "namespace", `${other}-app`, "a=b"], /forbidden/i);

    // What reflection needs, in its own namespaces.
    const ns = mine[0]!;
    await eventually(async () => {
      const can = await as(["auth", "can-i", "create", "pods", "-n", ns]);
      assert.equal(can.stdout.trim(), "yes");
    });
    const manifest = `
apiVersion: v1
kind: Pod
metadata: { name: web, namespace: ${ns} }
spec:
  containers:
    - name: web
      image: nginx
      resources: { requests: { cpu: 100m, memory: 64Mi }, limits: { cpu: 100m, memory: 64Mi } }
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: ${ns} }
spec: { selector: { app: web }, ports: [{ port: 80 }] }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: settings, namespace: ${ns} }
data: { a: b }
---
apiVersion: v1
kind: Secret
metadata: { name: token, namespace: ${ns} }
stringData: { a: b }
`;
    const applied = await as(["apply", "-f", "-"], manifest);
    assert.equal(applied.code, 0, applied.stderr);
    const listed = await as(["-n", ns, "get", "pods,services,configmaps,secrets", "-o", "name"]);
    assert.equal(listed.code, 0, listed.stderr);
    for (const name of ["pod/web", "service/web", "configmap/settings", "secret/token"]) {
      assert.match(listed.stdout, new RegExp(`^${name}$`, "m"));
    }
  });

  test("unpeer removes everything on both sides", async () => {
    const result = await tenantry(["unpeer", "--consumer", "edge-1", "--provider", "home"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(await readPeering(consumer, "home"), undefined);
    assert.equal(await readNode(consumer, "tenantry-home"), undefined);
    assert.equal(await exists(consumer, "v1", "Secret", peerSecretName("home"), "tenantry-system"), false);
    assert.equal(await exists(provider, TENANTS_API_VERSION, "Tenant", "peer-edge-1"), false);
    assert.equal(
      await exists(provider, "v1", "ConfigMap", "tenantry-network-peer-edge-1", "tenantry-system"),
      false,
    );
    assert.equal(
      await exists(
        provider,
        "rbac.authorization.k8s.io/v1",
        "Role",
        "tenantry-peer-edge-1",
        "tenantry-system",
      ),
      false,
    );
    assert.equal(
      await exists(
        provider,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "tenantry-peer-edge-1",
        "tenantry-system",
      ),
      false,
    );
    await eventually(
      async () => {
        assert.equal(
          await exists(consumer, "coordination.k8s.io/v1", "Lease", "tenantry-home", NODE_LEASE_NAMESPACE),
          false,
        );
        assert.equal(
          await exists(
            provider,
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            "tenantry:owners:peer-edge-1",
          ),
          false,
        );
        for (const name of mine)
          assert.equal(await exists(provider, "v1", "Namespace", name), false, `namespace ${name}`);
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const again = await tenantry(["unpeer", "--consumer", "edge-1", "--provider", "home"]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /no peering between consumer "edge-1" and provider "home"/);
  });
});

/** Who last wrote which part of a node and when, leaving out the cluster's own controllers. */
function writesOtherThanTheCluster(node: V1Node): string {
  return JSON.stringify(
    (node.metadata?.managedFields ?? [])
      .filter((f) => !f.manager?.startsWith("kube-controller-manager"))
      .map((f) => `${f.manager}/${f.operation}/${f.subresource ?? ""}@${String(f.time)}`)
      .sort(),
  );
}
