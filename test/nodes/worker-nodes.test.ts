/**
 * Worker nodes on demand against the home cluster and the tenantry of the test run: a user asks for
 * a private node and sees it go Building → Available → Joining → Running with CloudVeneto CaaS's
 * columns; it joins with its bootstrap token through a kubelet client CSR; their pods land on it
 * and nobody else's do; every refusal names its field; a used or expired token is refused by the
 * API server; deletion drains and removes the Node, the machine and the token.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { CertificatesV1Api, type V1Pod } from "@kubernetes/client-node";
import {
  BOOTSTRAP_NAMESPACE,
  bootstrapTokenSecret,
  NODE_OWNER_LABEL,
  NODE_OWNER_TAINT,
  NODE_POLICY_LABEL,
  newBootstrapToken,
  WORKER_NODE_LABEL,
  type WorkerNode,
} from "../../src/nodes/index.js";
import { createCertificateRequest } from "../../src/pki/index.js";
import { TENANT_LABEL, USER_LABEL } from "../../src/tenants/index.js";
import { refusalPattern } from "../support/admission.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { tenantryCli } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  adminKubeConfig,
  as,
  asAdmin,
  core,
  createTenant,
  deleteTenants,
  succeeded,
} from "../tenants/admission/support.js";
import {
  bootstrapTokensOf,
  callWithToken,
  readWorkerNode,
  waitForGone,
  waitForPhase,
  workerNodeManifest,
} from "./support.js";

const kc = testKubeConfig("home");
const suffix = randomBytes(3).toString("hex");
const tenantA = uniqueName("wna");
const tenantB = uniqueName("wnb");
const nodeName = `wn-${suffix}`;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let dave: TestUser;
/** The node's bootstrap token as it was before the node joined (what a thief could have copied). */
let usedToken = "";

/** Refused by a check of the nodes capability: WorkerNodes are cluster-scoped, pods here in tenant namespaces. */
function denied(result: { code: number; stderr: string }, webhook: string, pattern: RegExp): void {
  assert.notEqual(result.code, 0, "refused");
  assert.match(
    result.stderr,
    new RegExp(refusalPattern(webhook, webhook.startsWith("pod-") ? "namespaced" : "cluster")),
  );
  assert.match(result.stderr, pattern);
}

const tokensOf = (name: string) => bootstrapTokensOf(core, name);

async function podOf(namespace: string, name: string): Promise<V1Pod> {
  return core.readNamespacedPod({ namespace, name });
}

async function schedulingFailure(namespace: string, pod: string): Promise<string> {
  return eventually(async () => {
    const events = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${pod},reason=FailedScheduling`,
    });
    const message = events.items[0]?.message;
    assert.ok(message, `pod ${pod} has a FailedScheduling event`);
    return message;
  });
}

before(async () => {
  const users = await Promise.all(
    ["alice", "bob", "carol", "dave"].map((n) => testUser(`wn-${n}-${suffix}`)),
  );
  [alice, bob, carol, dave] = users as [TestUser, TestUser, TestUser, TestUser];
  await createTenant(tenantA, {
    owners: [{ kind: "User", name: alice.name }],
    users: [{ name: bob.name, role: "edit" }],
    namespaces: [{ name: "dev" }],
    workerNodes: { maxNodes: 3, flavors: ["m1.small", "m1.medium"] },
  });
  await createTenant(tenantB, {
    owners: [{ kind: "User", name: carol.name }],
    namespaces: [{ name: "dev" }],
  });
});

after(async () => {
  for (const name of [nodeName, `${nodeName}-2`, `${nodeName}-3`])
    await asAdmin(["delete", "workernode", name, "--ignore-not-found", "--wait=false"]);
  await waitForGone(kc, nodeName).catch(() => {});
  await deleteTenants([tenantA, tenantB]);
});

describe("a private worker node", () => {
  it("is asked for by its owner and goes Building → Available → Joining → Running, shown with CloudVeneto CaaS's columns", async () => {
    succeeded(
      await as(
        alice,
        ["apply", "-f", "-"],
        workerNodeManifest(nodeName, { flavor: "m1.small", keyPair: "alice", securityGroups: ["default"] }),
      ),
    );
    // The token admission made, as the machine gets it: copied before it is used (and deleted).
    const [secret] = await eventually(async () => {
      const found = await tokensOf(nodeName);
      assert.equal(found.length, 1, "one bootstrap token for the node");
      return found;
    });
    const data = secret!.data ?? {};
    const decode = (key: string) => Buffer.from(data[key] ?? "", "base64").toString();
    assert.equal(secret!.type, "bootstrap.kubernetes.io/token");
    assert.equal(decode("usage-bootstrap-authentication"), "true");
    assert.ok(Date.parse(decode("expiration")) > Date.now(), "it expires, later");
    usedToken = `${decode("token-id")}.${decode("token-secret")}`;

    const running = await waitForPhase(kc, nodeName, "Running");
    assert.deepEqual(
      running.status?.phases?.map((p) => p.phase),
      ["Building", "Available", "Joining", "Running"],
    );
    assert.equal(running.spec.owner, alice.name, "the owner is who asked");
    assert.equal(running.spec.tenant, tenantA);
    assert.equal(running.metadata?.labels?.[USER_LABEL], alice.name);
    assert.equal(running.metadata?.labels?.[TENANT_LABEL], tenantA);
    assert.deepEqual(
      running.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ["MachineReady", "True", "MachineActive"],
        ["Joined", "True", "NodeRegistered"],
        ["Ready", "True", "NodeReady"],
      ],
    );

    const table = succeeded(await as(alice, ["get", "workernodes", nodeName, "-o", "wide"]));
    const [header, line] = table.trimEnd().split("\n");
    assert.deepEqual(header!.split(/\s{2,}/), [
      "NAME",
      "PHASE",
      "OWNER",
      "POLICY",
      "PROVIDER",
      "VM FLAVOR",
      "VM STATUS",
      "VM IPV4",
      "AGE",
    ]);
    const cells = line!.split(/\s+/);
    assert.deepEqual(cells.slice(0, 7), [
      nodeName,
      "Running",
      alice.name,
      "private",
      "simulated",
      "m1.small",
      "ACTIVE",
    ]);
    assert.match(cells[7]!, /^127\.0\.\d+\.\d+$/);
  });

  it("joined with its bootstrap token through a kubelet client CSR, is labelled and tainted for its owner, and its token is gone", async () => {
    const node = await core.readNode({ name: nodeName });
    assert.equal(node.metadata?.labels?.[WORKER_NODE_LABEL], nodeName);
    assert.equal(node.metadata?.labels?.[NODE_POLICY_LABEL], "private");
    assert.equal(node.metadata?.labels?.[NODE_OWNER_LABEL], alice.name);
    assert.ok(
      node.spec?.taints?.some(
        (t) => t.key === NODE_OWNER_TAINT && t.value === alice.name && t.effect === "NoSchedule",
      ),
      "tainted for its owner",
    );
    assert.ok(node.metadata?.ownerReferences?.some((o) => o.kind === "WorkerNode" && o.name === nodeName));
    const csrs = await adminKubeConfig.makeApiClient(CertificatesV1Api).listCertificateSigningRequest();
    const csr = csrs.items.find((c) => c.spec.username === `system:bootstrap:${usedToken.split(".")[0]}`);
    assert.ok(csr, "the machine asked for its certificate with the token");
    assert.equal(csr.spec.signerName, "kubernetes.io/kube-apiserver-client-kubelet");
    assert.ok(
      csr.status?.conditions?.some((c) => c.type === "Approved"),
      "approved by kube-controller-manager",
    );
    assert.ok(csr.status?.certificate, "and signed");
    await eventually(async () =>
      assert.deepEqual(await tokensOf(nodeName), [], "the token is deleted once Running"),
    );
  });

  it("runs its owner's pods, and keeps everyone else's off: other tenants and other users of the same tenant", async () => {
    succeeded(await as(alice, ["-n", `${tenantA}-dev`, "run", "mine", "--image=nginx"]));
    await eventually(async () =>
      assert.equal((await podOf(`${tenantA}-dev`, "mine")).spec?.nodeName, nodeName),
    );

    // Named by host name: the taint keeps them off.
    const selector = JSON.stringify({ spec: { nodeSelector: { "kubernetes.io/hostname": nodeName } } });
    succeeded(
      await as(bob, ["-n", `${tenantA}-dev`, "run", "bobs", "--image=nginx", `--overrides=${selector}`]),
    );
    succeeded(
      await as(carol, ["-n", `${tenantB}-dev`, "run", "carols", "--image=nginx", `--overrides=${selector}`]),
    );
    assert.match(
      await schedulingFailure(`${tenantA}-dev`, "bobs"),
      /untolerated taint \{tenantry\.dev\/node-owner: /,
    );
    assert.match(
      await schedulingFailure(`${tenantB}-dev`, "carols"),
      /untolerated taint \{tenantry\.dev\/node-owner: /,
    );

    // Tolerating every owner's taint: tenantry's node affinity keeps the pod off other users' private
    // nodes. (A toleration of every taint is refused outright: it would tolerate the nodes reserved
    // for runtimes, test/tenants/admission/reserved-nodes.test.ts.)
    const everything = JSON.stringify({
      spec: {
        tolerations: [{ key: "tenantry.dev/node-owner", operator: "Exists" }],
        nodeSelector: { "kubernetes.io/hostname": nodeName },
      },
    });
    succeeded(
      await as(carol, [
        "-n",
        `${tenantB}-dev`,
        "run",
        "greedy",
        "--image=nginx",
        `--overrides=${everything}`,
      ]),
    );
    const greedy = await podOf(`${tenantB}-dev`, "greedy");
    const terms =
      greedy.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
    // Each term of its own: no worker node, a shared one, or carol's.
    assert.deepEqual(
      terms?.map((t) =>
        (t.matchExpressions ?? []).map(
          (r) => `${r.key} ${r.operator}${r.values ? ` ${r.values.join(",")}` : ""}`,
        ),
      ),
      [
        [`${NODE_OWNER_LABEL} DoesNotExist`, `${WORKER_NODE_LABEL} DoesNotExist`],
        [`${NODE_OWNER_LABEL} DoesNotExist`, `${NODE_POLICY_LABEL} In shared`],
        [`${NODE_OWNER_LABEL} In ${carol.name}`],
      ],
    );
    assert.match(
      await schedulingFailure(`${tenantB}-dev`, "greedy"),
      /didn't match Pod's node affinity\/selector/,
    );

    // Named directly: refused.
    const direct = JSON.stringify({ spec: { nodeName } });
    denied(
      await as(carol, ["-n", `${tenantB}-dev`, "run", "direct", "--image=nginx", `--overrides=${direct}`]),
      "pod-private-nodes-guard.nodes.tenantry.dev",
      new RegExp(`spec\\.nodeName: node "${nodeName}" is a private worker node of another user`),
    );

    // An ordinary pod of carol's runs, elsewhere.
    succeeded(await as(carol, ["-n", `${tenantB}-dev`, "run", "plain", "--image=nginx"]));
    const plain = await eventually(async () => {
      const pod = await podOf(`${tenantB}-dev`, "plain");
      assert.ok(pod.spec?.nodeName, "scheduled");
      return pod;
    });
    assert.notEqual(plain.spec?.nodeName, nodeName);
    for (const [namespace, pod] of [
      [`${tenantA}-dev`, "bobs"],
      [`${tenantB}-dev`, "carols"],
      [`${tenantB}-dev`, "greedy"],
    ] as const)
      assert.equal((await podOf(namespace, pod)).spec?.nodeName, undefined, `${pod} stays Pending`);
  });

  it("refuses bad requests naming the field, and leaves nothing behind", async () => {
    const attempts: [TestUser, string, Partial<WorkerNode["spec"]>, string, RegExp][] = [
      [
        alice,
        `${nodeName}-p`,
        { provider: "nowhere" },
        "workernodes",
        /spec\.provider: there is no NodeProvider "nowhere" \(there are: .*"simulated"/,
      ],
      [
        alice,
        `${nodeName}-f`,
        { flavor: "m9.huge" },
        "workernodes",
        /spec\.flavor: NodeProvider "simulated" offers no flavor "m9\.huge" \(it offers: "m1\.small"/,
      ],
      [
        alice,
        `${nodeName}-t`,
        { flavor: "m1.large" },
        "workernodes",
        /spec\.flavor: flavor "m1\.large" is not allowed in tenant "wna-.*" \(spec\.workerNodes\.flavors: "m1\.small", "m1\.medium"\)/,
      ],
      [
        alice,
        `${nodeName}-o`,
        { owner: bob.name },
        "workernode-owner",
        /spec\.owner: "wn-bob-.*" is not you \("wn-alice-.*"\): users ask for worker nodes for themselves only/,
      ],
      [
        alice,
        "home-node-0",
        {},
        "workernodes",
        /metadata\.name: a Node named "home-node-0" already exists in the cluster/,
      ],
    ];
    for (const [user, name, spec, webhook, message] of attempts) {
      denied(
        await as(user, ["create", "-f", "-"], workerNodeManifest(name, spec)),
        `${webhook}.nodes.tenantry.dev`,
        message,
      );
      assert.equal(await readWorkerNode(kc, name), undefined, `${name} was not created`);
    }
    // Users who may not have worker nodes are refused before admission: tenantry's authorizer
    // refuses a tenant without spec.workerNodes by name, RBAC a user in no tenant.
    const refused: [TestUser, string, RegExp][] = [
      [
        carol,
        `${nodeName}-c`,
        /none of your tenants \("wnb-.*"\) may ask for worker nodes \(their spec\.workerNodes allows none\)/,
      ],
      [dave, `${nodeName}-d`, /cannot create resource "workernodes"/],
    ];
    for (const [user, name, message] of refused) {
      const result = await as(user, ["create", "-f", "-"], workerNodeManifest(name, {}));
      assert.notEqual(result.code, 0, `${user.name} was refused`);
      assert.match(result.stderr, /\(Forbidden\)/);
      assert.match(result.stderr, message);
      assert.equal(await readWorkerNode(kc, name), undefined, `${name} was not created`);
    }
    // A dry run is decided as the real request, and makes no token.
    succeeded(
      await as(alice, ["create", "--dry-run=server", "-f", "-"], workerNodeManifest(`${nodeName}-dry`, {})),
    );
    assert.equal(await readWorkerNode(kc, `${nodeName}-dry`), undefined);
    // The quota: three nodes at most.
    succeeded(
      await as(alice, ["create", "-f", "-"], workerNodeManifest(`${nodeName}-2`, { flavor: "m1.medium" })),
    );
    succeeded(await as(alice, ["create", "-f", "-"], workerNodeManifest(`${nodeName}-3`, {})));
    denied(
      await as(alice, ["create", "-f", "-"], workerNodeManifest(`${nodeName}-4`, {})),
      "workernodes.nodes.tenantry.dev",
      /tenant "wna-.*" has 3 worker nodes of the 3 its spec\.workerNodes\.maxNodes allows: delete one first/,
    );
    for (const name of ["p", "f", "t", "o", "d", "c", "dry", "4"].map((s) => `${nodeName}-${s}`))
      assert.deepEqual(await tokensOf(name), [], `no token left for ${name}`);
    assert.deepEqual(await tokensOf("home-node-0"), []);
    // Nobody but its owner (and the tenant's owners, and administrators) deletes it: tenantry's
    // authorizer refuses a fellow member before admission is asked.
    const foreign = await as(bob, ["delete", "workernode", `${nodeName}-2`]);
    assert.notEqual(foreign.code, 0, "bob was refused");
    assert.match(foreign.stderr, /\(Forbidden\)/);
    assert.match(
      foreign.stderr,
      /WorkerNode "wn-.*-2" belongs to another user: you may delete only your own \(and, as a tenant's owner, the tenant's\)/,
    );
    assert.ok(await readWorkerNode(kc, `${nodeName}-2`), "the WorkerNode is still there");
    succeeded(await as(alice, ["delete", "workernode", `${nodeName}-2`, `${nodeName}-3`, "--wait=false"]));
  });

  it("lets the API server refuse a used, an expired and a misused bootstrap token", async () => {
    const csrBody = async (commonName: string) => ({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name: `wn-probe-${randomBytes(4).toString("hex")}` },
      spec: {
        request: Buffer.from((await createCertificateRequest(commonName, ["system:nodes"])).csrPem).toString(
          "base64",
        ),
        signerName: "kubernetes.io/kube-apiserver-client-kubelet",
        usages: ["digital signature", "client auth"],
      },
    });
    const path = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    // Used: deleted once the node was Running. kube-apiserver may remember it for a few seconds
    // more (its token cache); tenantry refuses its CSRs meanwhile, then the API server itself does.
    assert.ok(usedToken, "the first test copied the token");
    await eventually(
      async () => {
        const attempt = await callWithToken(
          kc,
          usedToken,
          "POST",
          path,
          await csrBody(`system:node:${nodeName}`),
        );
        if (attempt.status === 403) {
          assert.match(String(attempt.body.message), /does not exist any more \(used, expired or revoked\)/);
        }
        assert.equal(attempt.status, 401, `refused by the API server, got ${attempt.status}`);
      },
      { timeoutMs: 60_000, intervalMs: 2000 },
    );

    // Expired.
    const expired = newBootstrapToken(new Date(Date.now() - 60_000));
    const expiredSecret = bootstrapTokenSecret(expired, { name: `${nodeName}-x`, uid: "none" });
    await core.createNamespacedSecret({ namespace: BOOTSTRAP_NAMESPACE, body: expiredSecret });
    try {
      assert.equal(
        (
          await callWithToken(
            kc,
            `${expired.id}.${expired.secret}`,
            "POST",
            path,
            await csrBody("system:node:x"),
          )
        ).status,
        401,
      );
    } finally {
      await core
        .deleteNamespacedSecret({ name: expiredSecret.metadata!.name!, namespace: BOOTSTRAP_NAMESPACE })
        .catch(() => {});
    }

    // Valid, but for another node's certificate: refused by tenantry's CSR webhook.
    const valid = newBootstrapToken(new Date(Date.now() + 10 * 60_000));
    const validSecret = bootstrapTokenSecret(valid, { name: `${nodeName}-v`, uid: "none" });
    await core.createNamespacedSecret({ namespace: BOOTSTRAP_NAMESPACE, body: validSecret });
    try {
      const stolen = await callWithToken(
        kc,
        `${valid.id}.${valid.secret}`,
        "POST",
        path,
        await csrBody("system:node:home-node-0"),
      );
      assert.equal(stolen.status, 403);
      assert.match(
        String(stolen.body.message),
        new RegExp(
          `spec\\.request: the bootstrap token of worker node "${nodeName}-v" may only ask for the certificate of system:node:${nodeName}-v, not "system:node:home-node-0"`,
        ),
      );
    } finally {
      await core
        .deleteNamespacedSecret({ name: validSecret.metadata!.name!, namespace: BOOTSTRAP_NAMESPACE })
        .catch(() => {});
    }
  });

  it("is drained and removed with its Node, machine and token when its owner deletes it", async () => {
    succeeded(await as(alice, ["delete", "workernode", nodeName, "--wait=false"]));
    await waitForGone(kc, nodeName);
    await assert.rejects(core.readNode({ name: nodeName }), (err: { code?: number }) => err.code === 404);
    await eventually(async () =>
      assert.rejects(
        podOf(`${tenantA}-dev`, "mine"),
        (err: { code?: number }) => err.code === 404,
        "its pod was evicted",
      ),
    );
    assert.deepEqual(await tokensOf(nodeName), []);
  });
});

describe("a shared worker node", () => {
  it("joins the common pool: untainted, and anyone's pods may run on it", async () => {
    const name = `wn-shared-${suffix}`;
    succeeded(await as(alice, ["create", "-f", "-"], workerNodeManifest(name, { policy: "shared" })));
    try {
      await waitForPhase(kc, name, "Running");
      const node = await core.readNode({ name });
      assert.equal(node.metadata?.labels?.[NODE_POLICY_LABEL], "shared");
      assert.equal(node.metadata?.labels?.[NODE_OWNER_LABEL], undefined);
      assert.deepEqual(node.spec?.taints?.filter((t) => t.key.startsWith("tenantry.dev/")) ?? [], []);
      const selector = JSON.stringify({ spec: { nodeSelector: { "kubernetes.io/hostname": name } } });
      succeeded(
        await as(carol, [
          "-n",
          `${tenantB}-dev`,
          "run",
          "on-shared",
          "--image=nginx",
          `--overrides=${selector}`,
        ]),
      );
      await eventually(async () => {
        const pod = await podOf(`${tenantB}-dev`, "on-shared");
        assert.equal(pod.spec?.nodeName, name);
        assert.equal(pod.status?.phase, "Running");
      });
    } finally {
      await as(alice, ["delete", "workernode", name, "--wait=false"]);
      await waitForGone(kc, name);
    }
  });
});

describe("tenantry node", () => {
  it("creates with progress to Running, lists, describes and deletes; exit codes 2, 3 and 4", async () => {
    const name = `wn-cli-${suffix}`;
    const kubeconfig = ["--kubeconfig", alice.kubeconfigPath];
    const created = await tenantryCli(["node", "create", name, "--flavor", "m1.small", ...kubeconfig]);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, /node wn-cli-.*: Running on 127\.0\.\d+\.\d+/);
    assert.match(
      created.stdout,
      /^NAME\s+PHASE\s+OWNER\s+POLICY\s+PROVIDER\s+VM FLAVOR\s+VM STATUS\s+VM IPV4\s+AGE\n/,
    );
    const again = await tenantryCli(["node", "create", name, "--flavor", "m1.small", ...kubeconfig]);
    assert.equal(again.code, 4, again.stderr);
    const bad = await tenantryCli(["node", "create", `${name}-x`, "--flavor", "m9.huge", ...kubeconfig]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /spec\.flavor: NodeProvider "simulated" offers no flavor "m9\.huge"/);
    const listed = JSON.parse((await tenantryCli(["node", "list", "-o", "json", ...kubeconfig])).stdout) as {
      items: WorkerNode[];
    };
    assert.ok(listed.items.some((n) => n.metadata?.name === name && n.status?.phase === "Running"));
    const described = await tenantryCli(["node", "describe", name, ...kubeconfig]);
    assert.equal(described.code, 0, described.stderr);
    assert.match(
      described.stdout,
      /Phases:\n {2}Building .*\n {2}Available .*\n {2}Joining .*\n {2}Running /,
    );
    const missing = await tenantryCli(["node", "describe", `${name}-missing`, ...kubeconfig]);
    assert.equal(missing.code, 3);
    const deleted = await tenantryCli(["node", "delete", name, ...kubeconfig]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stderr, /deleted \(its Node, machine and token are gone\)/);
    assert.equal(await readWorkerNode(kc, name), undefined);
  });
});
