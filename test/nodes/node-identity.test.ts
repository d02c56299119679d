/**
 * A worker node's owner attacks with the node's own identity. The machine is theirs (root), so its
 * kubelet's certificate (`system:node:<name>`, from the real TLS bootstrap of a simulated machine)
 * is theirs too: here it is taken from the machine's /etc/kubernetes/kubelet.conf and used with
 * kubectl. With it they may not put pods into another tenant's namespace (where one became an
 * endpoint of that tenant's Service), into kube-system, or anywhere else; nor take the owner label
 * or taint off their node, relabel it into another tenant's node pool, or register it again
 * without its taint. The node's own heartbeats go on, and its owner's pods still run on it.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Node } from "@kubernetes/client-node";
import { NODE_OWNER_LABEL, NODE_OWNER_TAINT, WORKER_NODE_LABEL } from "../../src/nodes/index.js";
import { USER_LABEL, userLabelValue } from "../../src/tenants/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { type KubectlResult, kubectl } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  as,
  asAdmin,
  core,
  createTenant,
  deleteTenants,
  manifest,
  succeeded,
} from "../tenants/admission/support.js";
import { waitForGone, waitForPhase, workerNodeManifest } from "./support.js";

const kc = testKubeConfig("home");
const suffix = randomBytes(3).toString("hex");
const tenantA = uniqueName("nia");
const tenantB = uniqueName("nib");
/** Another tenant of carol's, with a node pool: its pods go only to nodes labelled so. */
const tenantC = uniqueName("nic");
const nodeName = `ni-${suffix}`;
const poolLabel = `pool-${suffix}`;
let alice: TestUser;
let carol: TestUser;
/** The stolen identity: the kubelet's kubeconfig on alice's machine. */
let kubeletConf: string;
let node: V1Node;

const asNode = (args: string[], input?: string): Promise<KubectlResult> => kubectl(kubeletConf, args, input);

/** The node's identity through the API directly (kubectl reads nodes/status first, which a node may not). */
function nodeApi(): CoreV1Api {
  const asTheNode = new KubeConfig();
  asTheNode.loadFromFile(kubeletConf);
  return asTheNode.makeApiClient(CoreV1Api);
}

function refused(result: KubectlResult, pattern: RegExp): void {
  assert.notEqual(result.code, 0, `the node's request went through: ${result.stdout}`);
  assert.match(result.stderr, pattern);
}

/** A mirror pod as the kubelet makes one, bound to its node, owned by its Node object. */
function mirrorPod(namespace: string, name: string, labels: Record<string, string> = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      labels,
      annotations: { "kubernetes.io/config.mirror": "deadbeef", "kubernetes.io/config.source": "file" },
      ownerReferences: [
        { apiVersion: "v1", kind: "Node", name: nodeName, uid: node.metadata!.uid!, controller: true },
      ],
    },
    spec: { nodeName, containers: [{ name: "c", image: "nginx" }] },
  };
}

before(async () => {
  [alice, carol] = (await Promise.all([testUser(`ni-alice-${suffix}`), testUser(`ni-carol-${suffix}`)])) as [
    TestUser,
    TestUser,
  ];
  await createTenant(tenantA, {
    owners: [{ kind: "User", name: alice.name }],
    namespaces: [{ name: "dev" }],
    workerNodes: { maxNodes: 1, flavors: ["m1.small"] },
  });
  await createTenant(tenantB, {
    owners: [{ kind: "User", name: carol.name }],
    namespaces: [{ name: "dev" }],
  });
  await createTenant(tenantC, {
    owners: [{ kind: "User", name: carol.name }],
    namespaces: [{ name: "dev" }],
    nodePool: { nodeSelector: { [poolLabel]: "yes" } },
  });
  // carol's Service, which a pod with its labels would join.
  succeeded(
    await as(carol, ["-n", `${tenantB}-dev`, "create", "service", "clusterip", "web", "--tcp=80:80"]),
  );
  succeeded(await as(alice, ["apply", "-f", "-"], workerNodeManifest(nodeName, { policy: "private" })));
  await waitForPhase(kc, nodeName, "Running", 180_000);
  kubeletConf = join(
    testEnvironment().dir,
    "home",
    "machines",
    nodeName,
    "root",
    "etc",
    "kubernetes",
    "kubelet.conf",
  );
  assert.ok(existsSync(kubeletConf), `the machine's kubelet kubeconfig at ${kubeletConf}`);
  node = await core.readNode({ name: nodeName });
  // The identity is the node's: it may read its own Node.
  assert.match(
    succeeded(await asNode(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"])),
    new RegExp(`^system:node:${nodeName}$`),
  );
});

after(async () => {
  await asAdmin(["delete", "workernode", nodeName, "--ignore-not-found", "--wait=false"]);
  await waitForGone(kc, nodeName).catch(() => {});
  await deleteTenants([tenantA, tenantB, tenantC]);
});

describe("a worker node's own identity, in its owner's hands", () => {
  it("creates no mirror pod in another tenant's namespace (none joins its Service), in kube-system or in its own tenant", async () => {
    for (const namespace of [`${tenantB}-dev`, "kube-system", "tenantry-system", `${tenantA}-dev`]) {
      const name = `mirror-${suffix}`;
      refused(
        // Claiming to be alice's pod (a cluster component's pods are trusted with their user label).
        await asNode(
          ["create", "-f", "-"],
          manifest(mirrorPod(namespace, name, { app: "web", [USER_LABEL]: userLabelValue(alice.name) })),
        ),
        new RegExp(
          `admission webhook "pods-from-worker-nodes\\.nodes\\.tenantry\\.dev" denied the request: metadata\\.annotations\\[kubernetes\\.io/config\\.mirror\\]: worker node "${nodeName}" of tenant "${tenantA}" creates no pods`,
        ),
      );
      await assert.rejects(
        core.readNamespacedPod({ namespace, name }),
        (err: { code?: number }) => err.code === 404,
      );
    }
    const endpoints = await core
      .readNamespacedEndpoints({ namespace: `${tenantB}-dev`, name: "web" })
      .catch(() => undefined);
    assert.deepEqual(endpoints?.subsets ?? [], [], "nothing joined carol's Service");
  });

  it("cannot take its owner label or taint off, nor relabel itself into another tenant's node pool", async () => {
    // tenant C's pods go to nodes with this label: with it, they would come to alice's machine.
    const ownerLabel = NODE_OWNER_LABEL;
    refused(
      await asNode(["label", "node", nodeName, `${ownerLabel}-`]),
      /is not allowed to modify labels: node-restriction\.kubernetes\.io\/tenantry-node-owner/,
    );
    // Through the status subresource too (kubelets update labels that way at start).
    await assert.rejects(
      nodeApi().patchNodeStatus(
        { name: nodeName, body: { metadata: { labels: { [ownerLabel]: null } } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      ),
      (err: { code?: number; body?: string }) =>
        err.code === 403 && /is not allowed to modify labels/.test(String(err.body)),
    );
    refused(
      await asNode(["taint", "node", nodeName, `${NODE_OWNER_TAINT}-`]),
      /is not allowed to modify taints/,
    );
    refused(
      await asNode(["label", "node", nodeName, `${poolLabel}=yes`]),
      new RegExp(
        `denied the request: metadata\\.labels\\[${poolLabel}\\]: worker node "${nodeName}" may not add it`,
      ),
    );
    refused(
      await asNode(["label", "node", nodeName, `${WORKER_NODE_LABEL}-`]),
      /denied the request: metadata\.labels\[tenantry\.dev\/worker-node\]: .* may not remove it/,
    );
    const now = await core.readNode({ name: nodeName });
    assert.equal(now.metadata?.labels?.[ownerLabel], alice.name);
    assert.equal(now.metadata?.labels?.[poolLabel], undefined);
    assert.ok(now.spec?.taints?.some((t) => t.key === NODE_OWNER_TAINT && t.value === alice.name));
  });

  it("cannot register its Node again without its taint or with another tenant's pool label", async () => {
    const again = (labels: Record<string, string>, taints: V1Node["spec"]) =>
      asNode(
        ["create", "-f", "-"],
        manifest({
          apiVersion: "v1",
          kind: "Node",
          metadata: { name: nodeName, labels: { [WORKER_NODE_LABEL]: nodeName, ...labels } },
          spec: taints,
        }),
      );
    const taint = { taints: [{ key: NODE_OWNER_TAINT, value: alice.name, effect: "NoSchedule" }] };
    refused(
      await again({}, {}),
      /denied the request: spec\.taints: worker node .* registers with the taint tenantry\.dev\/node-owner/,
    );
    refused(
      await again({ [poolLabel]: "yes" }, taint),
      new RegExp(
        `denied the request: metadata\\.labels\\[${poolLabel}\\]: worker node "${nodeName}" registers only with the labels tenantry gave it`,
      ),
    );
    // As tenantry gave it, admission lets it by: the name is simply taken.
    refused(await again({}, taint), /AlreadyExists|already exists/);
  });

  it("still reports its status, and runs its owner's pods", async () => {
    await nodeApi().patchNodeStatus(
      {
        name: nodeName,
        body: {
          status: {
            conditions: [{ type: "AttackTest", status: "True", reason: "Heartbeat", message: "ok" }],
          },
        },
      },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    succeeded(await as(alice, ["-n", `${tenantA}-dev`, "run", "mine", "--image=nginx"]));
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ namespace: `${tenantA}-dev`, name: "mine" });
        assert.equal(pod.spec?.nodeName, nodeName, "alice's pod prefers her node");
      },
      { timeoutMs: 60_000 },
    );
  });
});
