/**
 * Admission from the attacker's side: anyone who reaches tenantry's webhook port (a tenant's pod,
 * a worker node's owner) POSTs AdmissionReviews of their own making. Without kube-apiserver's
 * webhook client certificate — none at all, or one of their own with the right name — they get a
 * 401 and change nothing: no quota reserved, no bootstrap token, no node of a tenant's count used.
 * kube-apiserver itself, presenting its certificate, is answered; and dry runs, through
 * kube-apiserver or sent with its certificate, reserve nothing and create no Secret.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from "../../src/pki/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { WEBHOOK_TLS_SECRET } from "../../src/webhooks/index.js";
import { bootstrapTokensOf } from "../nodes/support.js";
import { testEnvironment, testKubeConfig, uniqueName, webhookClientOf } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { httpsJson } from "../support/https-json.js";
import { type TestUser, testUser } from "../support/users.js";
import { as, createTenant, deleteTenants, succeeded } from "../tenants/admission/support.js";

const kc = testKubeConfig("home");
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const tenant = uniqueName("forge");
const namespace = `${tenant}-dev`;
const quotas = { group: "tenantry.dev", version: "v1alpha1", plural: "tenantresourcequotas" };
let owner: TestUser;
/** The CA of tenantry's serving certificate: the attacker may well verify who they talk to. */
let servingCaPem: string;
/** kube-apiserver's webhook client certificate (what only the control plane holds). */
let apiServer: KeyPairPem;
/** The same name from a CA of the attacker's own. */
let selfMade: KeyPairPem;

interface Answer {
  status: number;
  body: { title?: string; detail?: string; response?: { allowed?: boolean; status?: { message?: string } } };
}

/** POSTs an AdmissionReview to the home tenantry's webhook server, as whoever holds `client`. */
async function post(path: string, review: object, client?: KeyPairPem): Promise<Answer> {
  return (await httpsJson(`${testEnvironment().tenantry.webhookUrl}${path}`, {
    ca: servingCaPem,
    body: review,
    ...(client ? { client } : {}),
  })) as Answer;
}

function admissionReview(request: Record<string, unknown>) {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: `forged-${randomBytes(6).toString("hex")}`,
      operation: "CREATE",
      userInfo: { username: "system:serviceaccount:kube-system:replicaset-controller", groups: [] },
      ...request,
    },
  };
}

const podReview = (name: string, dryRun = false) =>
  admissionReview({
    kind: { group: "", version: "v1", kind: "Pod" },
    resource: { group: "", version: "v1", resource: "pods" },
    namespace,
    name,
    dryRun,
    object: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace },
      spec: { containers: [{ name: "c", image: "nginx" }] },
    },
  });

const workerNodeReview = (name: string) =>
  admissionReview({
    kind: { group: "tenantry.dev", version: "v1alpha1", kind: "WorkerNode" },
    resource: { group: "tenantry.dev", version: "v1alpha1", resource: "workernodes" },
    name,
    object: {
      apiVersion: TENANTS_API_VERSION,
      kind: "WorkerNode",
      metadata: { name, uid: randomBytes(8).toString("hex") },
      spec: { provider: "simulated", flavor: "m1.small", policy: "private", owner: owner.name, tenant },
    },
  });

async function quotaStatus() {
  const quota = (await custom.getClusterCustomObject({ ...quotas, name: tenant })) as {
    status?: { used?: Record<string, string>; reservations?: { id: string; name: string }[] };
  };
  return { used: quota.status?.used ?? {}, reservations: quota.status?.reservations ?? [] };
}

const workerNodeManifest = (name: string) =>
  JSON.stringify({
    apiVersion: TENANTS_API_VERSION,
    kind: "WorkerNode",
    metadata: { name },
    spec: { provider: "simulated", flavor: "m1.small", policy: "private" },
  });

before(async () => {
  const secret = await core.readNamespacedSecret({ name: WEBHOOK_TLS_SECRET, namespace: "tenantry-system" });
  servingCaPem = Buffer.from(secret.data!["ca.crt"]!, "base64").toString();
  const client = webhookClientOf("home");
  apiServer = {
    certPem: readFileSync(client.certFile, "utf8"),
    keyPem: readFileSync(client.keyFile, "utf8"),
  };
  const own = await createCertificateAuthority("kube-apiserver-client-ca");
  selfMade = await issueCertificate(own, { commonName: "kube-apiserver", usage: "client" });
  owner = await testUser(`forge-owner-${randomBytes(3).toString("hex")}`);
  await createTenant(tenant, {
    owners: [{ kind: "User", name: owner.name }],
    namespaces: [{ name: "dev" }],
    quota: { hard: { pods: "1" } },
    workerNodes: { maxNodes: 1, flavors: ["m1.small"] },
  });
  await eventually(async () => assert.equal((await quotaStatus()).used.pods, "0"), { timeoutMs: 60_000 });
});

after(async () => {
  await deleteTenants([tenant]);
});

describe("admission reviews from callers other than kube-apiserver", () => {
  it("a forged pod review for another tenant's namespace gets 401 and reserves none of its quota", async () => {
    for (const client of [undefined, selfMade]) {
      const review = podReview(uniqueName("forged"));
      const answer = await post("/validate/tenant-namespaces", review, client);
      assert.equal(answer.status, 401, JSON.stringify(answer.body));
      assert.equal(answer.body.title, "client certificate required");
      const { reservations } = await quotaStatus();
      assert.deepEqual(
        reservations.filter((r) => r.id === review.request.uid),
        [],
        "the forged review reserved quota",
      );
    }
    // The tenant's one pod is still its own to create (a forged reservation would hold it 30 s).
    succeeded(await as(owner, ["-n", namespace, "run", "mine", "--image=nginx"]), "the owner's pod");
  });

  it("a forged WorkerNode review gets 401: no bootstrap token Secret, none of the tenant's node count used", async () => {
    const name = `forged-${randomBytes(3).toString("hex")}`;
    for (const client of [undefined, selfMade]) {
      const answer = await post("/validate/cluster", workerNodeReview(name), client);
      assert.equal(answer.status, 401, JSON.stringify(answer.body));
    }
    assert.deepEqual(await bootstrapTokensOf(core, name), [], "the forged review created a bootstrap token");
    // maxNodes is 1: the tenant's owner may still ask for its one node (here a server-side dry run).
    succeeded(
      await as(owner, ["create", "--dry-run=server", "-f", "-"], workerNodeManifest(`${name}-own`)),
      "the owner's dry-run WorkerNode",
    );
  });
});

describe("kube-apiserver, and dry runs", () => {
  it("a review with kube-apiserver's client certificate is answered (a dry run: nothing reserved)", async () => {
    const review = podReview(uniqueName("dry"), true);
    const answer = await post("/validate/tenant-namespaces", review, apiServer);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    // The tenant's pod takes its one pod of quota: the dry run is refused as the real one would be.
    assert.equal(answer.body.response?.allowed, false);
    assert.match(answer.body.response?.status?.message ?? "", /exceeded quota of tenant .*pods: requested 1/);
    assert.deepEqual(
      (await quotaStatus()).reservations.filter((r) => r.id === review.request.uid),
      [],
    );
  });

  it("kubectl create --dry-run=server reserves no quota and creates no bootstrap token", async () => {
    await eventually(async () => assert.equal((await quotaStatus()).used.pods, "1"), { timeoutMs: 60_000 });
    const refused = await as(owner, ["-n", namespace, "run", "dry", "--image=nginx", "--dry-run=server"]);
    assert.notEqual(refused.code, 0, "over quota, as the real pod would be");
    assert.match(refused.stderr, /exceeded quota of tenant/);
    succeeded(await as(owner, ["-n", namespace, "delete", "pod", "mine", "--wait=true"]), "deleting the pod");
    await eventually(async () => assert.equal((await quotaStatus()).used.pods, "0"), { timeoutMs: 60_000 });
    succeeded(await as(owner, ["-n", namespace, "run", "dry", "--image=nginx", "--dry-run=server"]));
    const { reservations } = await quotaStatus();
    assert.deepEqual(
      reservations.filter((r) => r.name === "dry"),
      [],
      "a dry run reserved quota",
    );
    const name = `dry-${randomBytes(3).toString("hex")}`;
    succeeded(await as(owner, ["create", "--dry-run=server", "-f", "-"], workerNodeManifest(name)));
    assert.deepEqual(await bootstrapTokensOf(core, name), [], "a dry run created a bootstrap token");
    // Nothing reserved: the tenant's one pod is still there to take.
    succeeded(await as(owner, ["-n", namespace, "run", "real", "--image=nginx"]));
  });
});
