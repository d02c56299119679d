/**
 * Identity and access end to end, through the real kube-apiserver of the home cluster (token
 * webhook and authorization webhook wired to tenantry) and the real kubectl: users log in to the
 * built-in identity service, land in their tenant, and are isolated from other users and tenants.
 */
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { after, before, describe, it } from "node:test";
import { DynamicObjectApi } from "../../src/kube/index.js";
import { ACCESS_CACHE_TTL_SECONDS } from "../../src/localcluster/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import {
  accessRequest,
  createTestUser,
  sharedBuiltinIdentity,
  stopSharedBuiltinIdentity,
  tokenKubeconfig,
} from "../support/identity.js";
import { kubectl, tenantryCli } from "../support/kubectl.js";
import { testUser } from "../support/users.js";

const tenant = uniqueName("acc");
const otherTenant = uniqueName("oth");
const namespace = `${tenant}-default`;
const otherNamespace = `${otherTenant}-default`;
const alice = uniqueName("alice"); // tenant admin
const bob = uniqueName("bob"); // member
const carol = uniqueName("carol"); // admin of the other tenant
const password = "correct-horse-1";

interface Session {
  token: string;
  kubeconfig: string;
}

async function login(username: string): Promise<Session> {
  const res = await accessRequest("POST", "/identity/v1/login", { body: { username, password } });
  assert.equal(res.status, 200, res.body);
  const { token } = res.json<{ token: string }>();
  return { token, kubeconfig: tokenKubeconfig(token) };
}

const pod = (name: string) =>
  JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: {
      containers: [
        {
          name: "c",
          image: "nginx",
          resources: { limits: { cpu: "100m", memory: "64Mi" } },
          securityContext: { allowPrivilegeEscalation: false },
        },
      ],
    },
  });

describe("identity and access through kube-apiserver", () => {
  const sessions: Record<string, Session> = {};

  before(async () => {
    await createTestUser({ name: alice, password, tenant, tenantAdmin: true });
    await createTestUser({ name: bob, password, tenant, groups: ["developers"] });
    await createTestUser({ name: carol, password, tenant: otherTenant, tenantAdmin: true });
    for (const user of [alice, bob, carol]) sessions[user] = await login(user);
    // First login created both tenants and their namespaces; wait for RBAC to be in place.
    for (const [user, ns] of [
      [alice, namespace],
      [bob, namespace],
      [carol, otherNamespace],
    ] as const) {
      await eventually(
        async () => {
          const r = await kubectl(sessions[user]!.kubeconfig, ["auth", "can-i", "create", "pods", "-n", ns]);
          assert.equal(r.stdout.trim(), "yes", `${user} in ${ns}: ${r.stdout}${r.stderr}`);
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
    }
  });

  after(async () => {
    const identity = await sharedBuiltinIdentity();
    for (const user of [alice, bob, carol]) await identity.deleteUser(user);
    const api = DynamicObjectApi.forKubeConfig(testKubeConfig());
    for (const name of [tenant, otherTenant]) {
      await api
        .delete({ apiVersion: "tenantry.dev/v1alpha1", kind: "Tenant", metadata: { name } })
        .catch(() => {});
    }
    await stopSharedBuiltinIdentity();
  });

  it("kubectl authenticates with the token: username, tenant groups and the tenant in extra", async () => {
    const r = await kubectl(sessions[bob]!.kubeconfig, ["auth", "whoami", "-o", "json"]);
    assert.equal(r.code, 0, r.stderr);
    const user = JSON.parse(r.stdout).status.userInfo;
    assert.equal(user.username, bob);
    assert.ok(user.groups.includes("developers"));
    assert.ok(user.groups.includes(`tenantry:tenant:${tenant}`));
    assert.ok(!user.groups.includes(`tenantry:tenant-admins:${tenant}`));
    assert.deepEqual(user.extra["tenantry.dev/tenant"], [tenant]);
  });

  it("first login put each user in their tenant: admins as owners, others as members", async () => {
    const r = await kubectl(testKubeConfigPath(), ["get", "tenant", tenant, "-o", "json"]);
    const spec = JSON.parse(r.stdout).spec;
    assert.deepEqual(spec.owners, [{ kind: "Group", name: `tenantry:tenant-admins:${tenant}` }]);
    assert.deepEqual(
      spec.users.map((u: { name: string }) => u.name),
      [bob],
    );
  });

  it("a member cannot delete another user's pod; deletes their own; the tenant admin deletes any", async () => {
    const [a, b] = [sessions[alice]!.kubeconfig, sessions[bob]!.kubeconfig];
    for (const [who, name] of [
      [a, "alice-pod"],
      [b, "bob-pod"],
      [b, "bob-pod-2"],
    ] as const) {
      const created = await kubectl(who, ["-n", namespace, "create", "-f", "-"], pod(name));
      assert.equal(created.code, 0, created.stderr);
    }

    const denied = await kubectl(b, ["-n", namespace, "delete", "pod", "alice-pod", "--wait=false"]);
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /Forbidden|forbidden/);
    assert.match(denied.stderr, /belongs to user/);
    const relabel = await kubectl(b, ["-n", namespace, "label", "pod", "alice-pod", "stolen=yes"]);
    assert.notEqual(relabel.code, 0, "a member cannot change another user's pod either");
    const own = await kubectl(b, ["-n", namespace, "delete", "pod", "bob-pod-2", "--wait=false"]);
    assert.equal(own.code, 0, own.stderr);
    // Deleting everything removes the member's own pods and stops at anyone else's.
    assert.equal((await kubectl(b, ["-n", namespace, "create", "-f", "-"], pod("bob-pod-3"))).code, 0);
    const sweep = await kubectl(b, ["-n", namespace, "delete", "pods", "--all", "--wait=false"]);
    assert.notEqual(sweep.code, 0);
    const left = await kubectl(a, ["-n", namespace, "get", "pods", "-o", "name"]);
    assert.match(left.stdout, /pod\/alice-pod/);
    assert.doesNotMatch(left.stdout, /bob-pod-3/);
    assert.equal((await kubectl(b, ["-n", namespace, "create", "-f", "-"], pod("bob-pod"))).code, 0);
    const byAdmin = await kubectl(a, [
      "-n",
      namespace,
      "delete",
      "pod",
      "bob-pod",
      "alice-pod",
      "--wait=false",
    ]);
    assert.equal(byAdmin.code, 0, byAdmin.stderr);
  });

  it("what no user created (the default ServiceAccount) belongs to the owners, not to every member", async () => {
    const [a, b] = [sessions[alice]!.kubeconfig, sessions[bob]!.kubeconfig];
    const account = await kubectl(a, ["-n", namespace, "get", "serviceaccount", "default", "-o", "json"]);
    assert.equal(account.code, 0, account.stderr);
    assert.equal(JSON.parse(account.stdout).metadata.labels?.["tenantry.dev/user"], undefined);
    const byMember = await kubectl(b, ["-n", namespace, "label", "serviceaccount", "default", "taken=yes"]);
    assert.notEqual(byMember.code, 0, "a member changed the tenant's default ServiceAccount");
    assert.match(byMember.stderr, /belongs to the owners of tenant/);
    const byOwner = await kubectl(a, ["-n", namespace, "label", "serviceaccount", "default", "checked=yes"]);
    assert.equal(byOwner.code, 0, byOwner.stderr);
  });

  it("another tenant's admin sees nothing of this tenant", async () => {
    const c = sessions[carol]!.kubeconfig;
    for (const args of [
      ["-n", namespace, "get", "pods"],
      ["-n", namespace, "get", "configmaps"],
      ["-n", namespace, "create", "configmap", "intruder"],
      ["get", "namespace", namespace],
      ["get", "namespaces"],
    ]) {
      const r = await kubectl(c, args);
      assert.notEqual(r.code, 0, `carol ran kubectl ${args.join(" ")}`);
      assert.match(r.stderr, /forbidden/i);
    }
  });

  it("an AccessGrant allows exactly what it names, and deleting it revokes it", async () => {
    const [a, c] = [sessions[alice]!.kubeconfig, sessions[carol]!.kubeconfig];
    const shared = await kubectl(a, ["-n", namespace, "create", "configmap", "shared", "--from-literal=k=v"]);
    assert.equal(shared.code, 0, shared.stderr);
    const grant = {
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "AccessGrant",
      metadata: { name: "share-config" },
      spec: {
        grantees: [{ kind: "Tenant", name: otherTenant }],
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
      },
    };
    const created = await kubectl(a, ["-n", namespace, "create", "-f", "-"], JSON.stringify(grant));
    assert.equal(created.code, 0, `the tenant admin creates the grant: ${created.stderr}`);

    await eventually(async () => {
      const r = await kubectl(c, ["-n", namespace, "get", "configmap", "shared", "-o", "jsonpath={.data.k}"]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "v");
    });
    // A "no" kube-apiserver cached from the earlier test lasts at most the unauthorized TTL.
    await eventually(
      async () => {
        const r = await kubectl(c, ["-n", namespace, "get", "configmaps", "-o", "name"]);
        assert.equal(r.code, 0, r.stderr);
      },
      { timeoutMs: (ACCESS_CACHE_TTL_SECONDS.unauthorized + 10) * 1000 },
    );
    for (const args of [
      ["-n", namespace, "delete", "configmap", "shared"],
      ["-n", namespace, "create", "configmap", "more"],
      ["-n", namespace, "get", "secrets"],
      ["-n", namespace, "get", "pods"],
    ]) {
      const r = await kubectl(c, args);
      assert.notEqual(r.code, 0, `the grant does not cover kubectl ${args.join(" ")}`);
    }
    // Nobody hands out what they do not hold: the tenant admin may not delete ResourceQuotas.
    const escalating = await kubectl(
      a,
      ["-n", namespace, "create", "-f", "-"],
      JSON.stringify({
        ...grant,
        metadata: { name: "escalating" },
        spec: {
          ...grant.spec,
          rules: [
            { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] },
            { apiGroups: [""], resources: ["resourcequotas"], verbs: ["get", "delete"] },
          ],
        },
      }),
    );
    assert.notEqual(escalating.code, 0, "a grant handed out a verb its author does not hold");
    assert.match(escalating.stderr, /spec\.rules\[1\]: you may not grant "delete resourcequotas"/);
    // A member cannot hand out access: grants are the tenant admin's.
    const byMember = await kubectl(
      sessions[bob]!.kubeconfig,
      ["-n", namespace, "create", "-f", "-"],
      JSON.stringify({ ...grant, metadata: { name: "by-member" } }),
    );
    assert.notEqual(byMember.code, 0);

    const revokedAt = Date.now();
    assert.equal((await kubectl(a, ["-n", namespace, "delete", "accessgrant", "share-config"])).code, 0);
    await eventually(
      async () => {
        const r = await kubectl(c, ["-n", namespace, "get", "configmap", "shared"]);
        assert.notEqual(r.code, 0);
      },
      { timeoutMs: (ACCESS_CACHE_TTL_SECONDS.authorized + 10) * 1000, intervalMs: 500 },
    );
    const seconds = (Date.now() - revokedAt) / 1000;
    assert.ok(seconds <= ACCESS_CACHE_TTL_SECONDS.authorized + 5, `revocation took ${seconds}s`);
  });

  it("refuses a grant that names a wildcard or RBAC, naming the field", async () => {
    const grant = (rule: Record<string, string[]>) =>
      JSON.stringify({
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "AccessGrant",
        metadata: { name: "too-much" },
        spec: { grantees: [{ kind: "User", name: carol }], rules: [rule] },
      });
    const a = sessions[alice]!.kubeconfig;
    const wildcard = await kubectl(
      a,
      ["-n", namespace, "create", "-f", "-"],
      grant({ apiGroups: [""], resources: ["pods"], verbs: ["*"] }),
    );
    assert.notEqual(wildcard.code, 0);
    assert.match(wildcard.stderr, /spec\.rules\[0\]\.verbs\[0\]: Unsupported value: "\*"/);
    const rbac = await kubectl(
      a,
      ["-n", namespace, "create", "-f", "-"],
      grant({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["get"] }),
    );
    assert.notEqual(rbac.code, 0);
    assert.match(rbac.stderr, /spec\.rules\[0\]\.apiGroups: Forbidden: .*rbac\.authorization\.k8s\.io/);
  });

  it("refuses expired, forged and revoked tokens", async () => {
    const identity = await sharedBuiltinIdentity();
    const expiring = await identity.issue((await identity.readUser(bob))!, 1);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const tampered = `${sessions[bob]!.token.slice(0, -4)}AAAA`;
    for (const token of [expiring.token, tampered, "not-a-token"]) {
      const r = await kubectl(tokenKubeconfig(token), ["-n", namespace, "get", "pods"]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /Unauthorized|must be logged in/i);
    }

    const review = await accessRequest("POST", "/authenticate", {
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token: expiring.token } },
    });
    assert.equal(
      review.json<{ status: { authenticated: boolean; error: string } }>().status.authenticated,
      false,
    );
    assert.match(review.json<{ status: { error: string } }>().status.error, /expired/);

    const session = await login(bob);
    assert.equal((await kubectl(session.kubeconfig, ["-n", namespace, "get", "pods"])).code, 0);
    const logout = await accessRequest("POST", "/identity/v1/logout", { token: session.token });
    assert.equal(logout.status, 204, logout.body);
    const revoked = await accessRequest("POST", "/authenticate", {
      body: { spec: { token: session.token } },
    });
    assert.match(revoked.json<{ status: { error: string } }>().status.error, /revoked/);
    await eventually(
      async () => {
        const r = await kubectl(session.kubeconfig, ["-n", namespace, "get", "pods"]);
        assert.notEqual(r.code, 0);
      },
      { timeoutMs: (ACCESS_CACHE_TTL_SECONDS.authenticated + 10) * 1000, intervalMs: 500 },
    );
  });

  it("answers TokenReviews and SubjectAccessReviews only to kube-apiserver's client certificate", async () => {
    const token = sessions[bob]!.token;
    const tokenReview = { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } };
    const accessReview = {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: { user: bob, resourceAttributes: { namespace, verb: "delete", resource: "pods", name: "x" } },
    };
    for (const [path, body] of [
      ["/authenticate", tokenReview],
      ["/authorize", accessReview],
    ] as const) {
      const anonymous = await accessRequest("POST", path, { body, anonymous: true });
      assert.equal(anonymous.status, 401, `${path} without a client certificate: ${anonymous.body}`);
      assert.match(anonymous.json<{ detail: string }>().detail, /client certificate/);
      assert.doesNotMatch(anonymous.body, new RegExp(bob), "nothing about the user leaks");
      const apiServer = await accessRequest("POST", path, { body });
      assert.equal(apiServer.status, 200, `${path} from kube-apiserver: ${apiServer.body}`);
    }
    // A certificate the cluster signed for a user is not kube-apiserver's.
    const user = await testUser(uniqueName("certuser"));
    const cluster = user.kubeConfig.getCurrentUser()!;
    const env = testEnvironment();
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest(
        `${env.tenantry.accessUrl}/authenticate`,
        {
          method: "POST",
          ca: env.tenantry.accessCaPem,
          cert: Buffer.from(cluster.certData!, "base64"),
          key: Buffer.from(cluster.keyData!, "base64"),
          headers: { "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(tokenReview));
    });
    assert.equal(status, 401);
  });

  it("TokenReview answers with the audiences a token was issued for, not those it was asked about", async () => {
    const token = sessions[bob]!.token;
    const review = async (audiences: string[]) =>
      (
        await accessRequest("POST", "/authenticate", {
          body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences } },
        })
      ).json<{ status: { authenticated: boolean; audiences?: string[]; error?: string } }>().status;
    const elsewhere = await review(["https://vault.example.com"]);
    assert.equal(elsewhere.authenticated, false);
    assert.match(elsewhere.error ?? "", /invalid for the target audiences/);
    const mixed = await review(["https://vault.example.com", "tenantry"]);
    assert.deepEqual([mixed.authenticated, mixed.audiences], [true, ["tenantry"]]);
    const api = await review(["https://kubernetes.default.svc.cluster.local"]);
    assert.deepEqual(
      [api.authenticated, api.audiences],
      [true, ["https://kubernetes.default.svc.cluster.local"]],
    );
  });

  it("answers bad login requests with a problem naming the field, and wrong passwords with 401", async () => {
    const missing = await accessRequest("POST", "/identity/v1/login", { body: { username: alice } });
    assert.equal(missing.status, 400);
    assert.match(missing.json<{ detail: string }>().detail, /password/);
    const long = await accessRequest("POST", "/identity/v1/login", {
      body: { username: alice, password: "x".repeat(1025) },
    });
    assert.equal(long.status, 400);
    assert.match(long.json<{ detail: string }>().detail, /password.*1024/);
    const wrong = await accessRequest("POST", "/identity/v1/login", {
      body: { username: alice, password: "nope-nope" },
    });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers["content-type"], "application/problem+json; charset=utf-8");
    const unknown = await accessRequest("POST", "/identity/v1/login", {
      body: { username: "nobody-here", password },
    });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.json<{ detail: string }>().detail, wrong.json<{ detail: string }>().detail);
  });

  describe("wrong passwords slow the guesser, never lock the user out from elsewhere", () => {
    const loginFrom = (client: string, username: string, pw: string) =>
      accessRequest("POST", "/identity/v1/login", {
        body: { username, password: pw },
        anonymous: true,
        localAddress: client,
      });
    let guessed: string;

    before(async () => {
      guessed = uniqueName("guessed");
      await createTestUser({ name: guessed, password, tenant });
    });
    after(async () => (await sharedBuiltinIdentity()).deleteUser(guessed));

    it("an attacker's client waits ever longer; the user's right password from another client works", async () => {
      const attacker = "127.0.0.2";
      const waits: number[] = [];
      for (let failures = 0; failures < 5; ) {
        const res = await loginFrom(attacker, guessed, `wrong-${failures}`);
        if (res.status === 429) {
          assert.match(res.json<{ detail: string }>().detail, /from this client/);
          const wait = Number(res.headers["retry-after"]);
          assert.ok(wait > 0, "Retry-After says when to come back");
          waits.push(wait);
          await new Promise((resolve) => setTimeout(resolve, wait * 1000));
          continue;
        }
        assert.equal(res.status, 401, res.body);
        failures++;
      }
      assert.ok(waits.length >= 2, `the attacker was made to wait (${waits.join(", ")} s)`);
      const throttled = await loginFrom(attacker, guessed, password);
      assert.equal(throttled.status, 429, "the attacker's client is still held back");
      const fromElsewhere = await loginFrom("127.0.0.3", guessed, password);
      assert.equal(fromElsewhere.status, 200, `the user logs in from another client: ${fromElsewhere.body}`);
    });

    it("only wrong passwords from many clients lock a user, and `tenantry user unlock` lifts the lock at once", async () => {
      const target = uniqueName("locked");
      await createTestUser({ name: target, password, tenant });
      // 100 wrong passwords, 3 from each client (none of them delayed yet): the lock's count.
      for (let i = 0; i < 100; i++) {
        const res = await loginFrom(`127.0.1.${10 + Math.floor(i / 3)}`, target, `wrong-${i}`);
        assert.equal(res.status, 401, `attempt ${i + 1}: ${res.body}`);
      }
      const locked = await loginFrom("127.0.2.1", target, password);
      assert.equal(locked.status, 429, locked.body);
      assert.match(locked.json<{ detail: string }>().detail, /locked .*tenantry user unlock/);
      assert.equal((await login(alice)).token.length > 0, true, "other users log in as before");
      const unlocked = await tenantryCli(["user", "unlock", target, "--kubeconfig", testKubeConfigPath()]);
      assert.equal(unlocked.code, 0, unlocked.stderr);
      await eventually(
        async () => assert.equal((await loginFrom("127.0.2.1", target, password)).status, 200),
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      await (await sharedBuiltinIdentity()).deleteUser(target);
    });
  });
});

function testKubeConfigPath(): string {
  return testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;
}
