import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Tenant } from "../api/tenant.js";
import type { AnyObject } from "./context.js";
import { tenantryIdentity } from "./identity.js";
import {
  checkNamespaceCreate,
  checkNamespaceDelete,
  checkNamespaceUpdate,
  mutateNamespaceCreate,
  namespaceQuotaMessage,
} from "./namespaces.js";

const identity = tenantryIdentity("tenantry-admin", "tenantry-system");
const alice = { username: "alice", groups: ["system:authenticated"] };
const bob = { username: "bob", groups: ["system:authenticated"] };
const carol = { username: "carol", groups: ["system:authenticated"] };
const admin = { username: "root", groups: ["system:masters"] };

function tenant(name: string, spec: Partial<Tenant["spec"]> = {}): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name },
    spec: { owners: [{ kind: "User", name: "alice" }], ...spec },
  } as Tenant;
}

const acme = tenant("acme");
const beta = tenant("beta", {
  owners: [
    { kind: "User", name: "alice" },
    { kind: "User", name: "bob" },
  ],
});
const gamma = tenant("gamma", {
  owners: [{ kind: "Group", name: "gamma-team" }],
  podSecurity: { level: "restricted" },
});

function namespace(
  name: string,
  labels?: Record<string, string>,
  extra: AnyObject["metadata"] = {},
): AnyObject {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name, ...(labels ? { labels } : {}), ...extra } };
}

const ownerLabels = (tenantName: string, level = "baseline") => ({
  "tenantry.dev/tenant": tenantName,
  "tenantry.dev/namespace-origin": "owner",
  "pod-security.kubernetes.io/enforce": level,
});

describe("namespace creation: which tenant", () => {
  test("an owner of one tenant joins it with origin owner and the tenant's pod-security level", () => {
    const decision = mutateNamespaceCreate(namespace("dev"), bob, [beta, gamma], identity);
    assert.deepEqual(decision, {
      allowed: true,
      patch: [{ op: "add", path: "/metadata/labels", value: ownerLabels("beta") }],
    });
    const group = mutateNamespaceCreate(
      namespace("g", { team: "x" }),
      { username: "dora", groups: ["gamma-team"] },
      [gamma],
      identity,
    );
    assert.deepEqual(group, {
      allowed: true,
      patch: [
        { op: "add", path: "/metadata/labels/tenantry.dev~1tenant", value: "gamma" },
        { op: "add", path: "/metadata/labels/tenantry.dev~1namespace-origin", value: "owner" },
        { op: "add", path: "/metadata/labels/pod-security.kubernetes.io~1enforce", value: "restricted" },
      ],
    });
  });

  test("an owner of several tenants names one with the label, else is told which they own", () => {
    const chosen = mutateNamespaceCreate(
      namespace("dev", { "tenantry.dev/tenant": "beta" }),
      alice,
      [acme, beta],
      identity,
    );
    assert.equal(chosen.allowed, true);
    assert.deepEqual(mutateNamespaceCreate(namespace("dev"), alice, [acme, beta], identity), {
      allowed: false,
      code: 403,
      message:
        'metadata.labels[tenantry.dev/tenant]: you own tenants "acme", "beta": set this label to the one namespace "dev" joins',
    });
    assert.deepEqual(
      mutateNamespaceCreate(
        namespace("dev", { "tenantry.dev/tenant": "gamma" }),
        alice,
        [acme, beta, gamma],
        identity,
      ),
      {
        allowed: false,
        code: 403,
        message:
          'metadata.labels[tenantry.dev/tenant]: "gamma" is not a tenant you own (you own "acme", "beta")',
      },
    );
  });

  test("non-owners, cluster administrators and system namespaces are left alone", () => {
    assert.deepEqual(mutateNamespaceCreate(namespace("x"), carol, [acme, beta], identity), { allowed: true });
    assert.deepEqual(mutateNamespaceCreate(namespace("x"), admin, [acme], identity), { allowed: true });
    assert.deepEqual(mutateNamespaceCreate(namespace("kube-system"), alice, [acme], identity), {
      allowed: true,
    });
    assert.deepEqual(mutateNamespaceCreate(namespace("tenantry-system"), alice, [acme], identity), {
      allowed: true,
    });
  });
});

describe("namespace creation: rules on the final object", () => {
  test("an owner's labelled namespace joins and counts against the quota", () => {
    const check = checkNamespaceCreate(namespace("dev", ownerLabels("acme")), alice, [acme], identity);
    assert.deepEqual(check, { allowed: true, tenant: acme });
    assert.deepEqual(checkNamespaceCreate(namespace("plain"), carol, [acme], identity), { allowed: true });
  });

  test("an owner's namespace may name no owner of its own: it would outlive its tenant", () => {
    const foreign = namespace("dev", ownerLabels("acme"));
    foreign.metadata!.ownerReferences = [
      { apiVersion: "tenantry.dev/v1alpha1", kind: "Tenant", name: "beta", uid: "0000-beta" },
    ];
    assert.deepEqual(checkNamespaceCreate(foreign, alice, [acme], identity), {
      allowed: false,
      message:
        'metadata.ownerReferences: a namespace of tenant "acme" is owned by that tenant alone (tenantry sets it); remove ownerReferences',
    });
    assert.deepEqual(checkNamespaceCreate(foreign, admin, [acme], identity), { allowed: true });
  });

  test("nobody but owners, tenantry and cluster administrators puts a namespace into a tenant", () => {
    assert.deepEqual(checkNamespaceCreate(namespace("x", ownerLabels("acme")), carol, [acme], identity), {
      allowed: false,
      message:
        'metadata.labels[tenantry.dev/tenant]: only owners of tenant "acme", tenantry and cluster administrators (system:masters) may put a namespace into it',
    });
    assert.deepEqual(
      checkNamespaceCreate(namespace("x", { "tenantry.dev/namespace-origin": "owner" }), carol, [], identity),
      {
        allowed: false,
        message:
          "metadata.labels[tenantry.dev/namespace-origin]: only tenant owners, tenantry and cluster administrators (system:masters) may set labels under tenantry.dev/",
      },
    );
    assert.deepEqual(checkNamespaceCreate(namespace("x", ownerLabels("acme")), admin, [acme], identity), {
      allowed: true,
    });
    assert.deepEqual(checkNamespaceCreate(namespace("x", ownerLabels("nope")), alice, [acme], identity), {
      allowed: false,
      message: 'metadata.labels[tenantry.dev/tenant]: tenant "nope" does not exist',
    });
  });

  test("an owner's namespace always joins a tenant, with origin owner and the tenant's pod-security level", () => {
    assert.deepEqual(checkNamespaceCreate(namespace("x"), alice, [acme], identity), {
      allowed: false,
      message:
        'metadata.labels[tenantry.dev/tenant]: a namespace created by an owner of "acme" joins one of those tenants',
    });
    const declared = { ...ownerLabels("acme"), "tenantry.dev/namespace-origin": "declared" };
    assert.deepEqual(checkNamespaceCreate(namespace("x", declared), alice, [acme], identity), {
      allowed: false,
      message:
        'metadata.labels[tenantry.dev/namespace-origin]: a namespace created by an owner has origin "owner", not "declared"',
    });
    const privileged = { ...ownerLabels("acme"), "pod-security.kubernetes.io/enforce": "privileged" };
    assert.deepEqual(checkNamespaceCreate(namespace("x", privileged), alice, [acme], identity), {
      allowed: false,
      message:
        'metadata.labels[pod-security.kubernetes.io/enforce]: tenant "acme" enforces "baseline" (spec.podSecurity.level)',
    });
  });

  test("cordoned tenants, name prefixes and declared names", () => {
    const cordoned = tenant("acme", { cordoned: true });
    assert.deepEqual(checkNamespaceCreate(namespace("x", ownerLabels("acme")), alice, [cordoned], identity), {
      allowed: false,
      message:
        'metadata.labels[tenantry.dev/tenant]: tenant "acme" is cordoned (spec.cordoned): no new namespaces',
    });
    const prefixed = tenant("acme", { namespacePrefix: "acme-" });
    assert.deepEqual(
      checkNamespaceCreate(namespace("dev", ownerLabels("acme")), alice, [prefixed], identity),
      {
        allowed: false,
        message: 'metadata.name: "dev" must start with "acme-" (spec.namespacePrefix of tenant "acme")',
      },
    );
    assert.equal(
      checkNamespaceCreate(namespace("acme-dev", ownerLabels("acme")), alice, [prefixed], identity).allowed,
      true,
    );
    const declaring = tenant("beta", {
      owners: [{ kind: "User", name: "bob" }],
      namespaces: [{ name: "prod" }],
    });
    assert.deepEqual(
      checkNamespaceCreate(namespace("beta-prod", ownerLabels("acme")), alice, [acme, declaring], identity),
      {
        allowed: false,
        message: 'metadata.name: "beta-prod" is reserved for spec.namespaces of tenant "beta"',
      },
    );
  });

  test("runtimes namespaces are tenantry's to create: neither their names nor their mark are an owner's", () => {
    assert.deepEqual(
      checkNamespaceCreate(namespace("acme-rt-bob", ownerLabels("acme")), alice, [acme], identity),
      {
        allowed: false,
        message:
          'metadata.name: names "acme-rt-…" are kept for the runtimes namespaces of tenant "acme"\'s users, which tenantry creates',
      },
    );
    const marked = namespace("acme-x", ownerLabels("acme"), {
      annotations: { "tenantry.dev/runtime-user": "bob" },
    });
    const refused = checkNamespaceCreate(marked, alice, [acme], identity);
    assert.match(
      refused.allowed ? "" : refused.message,
      /only tenantry marks a namespace as a user's runtimes namespace/,
    );
    const tenantry = { username: "tenantry-admin", groups: [] };
    assert.equal(
      checkNamespaceCreate(namespace("acme-rt-bob", ownerLabels("acme")), tenantry, [acme], identity).allowed,
      true,
      "tenantry itself",
    );
  });

  test("the quota message names the tenant, the count and the limit", () => {
    assert.equal(
      namespaceQuotaMessage("acme", 3, 3),
      'metadata.labels[tenantry.dev/tenant]: tenant "acme" has no namespace quota left: its owners created 3 namespaces and spec.namespaceQuota is 3',
    );
  });
});

describe("namespace updates and deletions", () => {
  const acmeNs = namespace("acme-dev", {
    ...ownerLabels("acme"),
    "app.kubernetes.io/managed-by": "tenantry",
  });
  const withLabels = (ns: AnyObject, labels: Record<string, string | undefined>): AnyObject => {
    const merged = { ...ns.metadata!.labels, ...labels };
    for (const [k, v] of Object.entries(labels)) if (v === undefined) delete merged[k];
    return { ...ns, metadata: { ...ns.metadata, labels: merged as Record<string, string> } };
  };

  test("a namespace outside every tenant cannot be labelled into one, except by tenantry and admins", () => {
    const plain = namespace("default", { "kubernetes.io/metadata.name": "default" });
    const hijack = withLabels(plain, ownerLabels("acme"));
    assert.equal(
      checkNamespaceUpdate(plain, hijack, alice, undefined, identity),
      'metadata.labels[tenantry.dev/tenant]: namespace "default" belongs to no tenant; only tenantry and cluster administrators (system:masters) may put it into one',
    );
    assert.equal(
      checkNamespaceUpdate(
        plain,
        withLabels(plain, { "tenantry.dev/namespace-origin": "owner" }),
        alice,
        undefined,
        identity,
      ),
      'metadata.labels[tenantry.dev/namespace-origin]: only tenantry and cluster administrators (system:masters) may set labels under tenantry.dev/ on namespace "default"',
    );
    assert.equal(checkNamespaceUpdate(plain, hijack, admin, undefined, identity), undefined);
    assert.equal(
      checkNamespaceUpdate(plain, withLabels(plain, { team: "x" }), carol, undefined, identity),
      undefined,
    );
  });

  test("a tenant namespace is not moved, and only its owners change it, never tenantry's metadata", () => {
    assert.equal(
      checkNamespaceUpdate(
        acmeNs,
        withLabels(acmeNs, { "tenantry.dev/tenant": "beta" }),
        bob,
        acme,
        identity,
      ),
      'metadata.labels[tenantry.dev/tenant]: namespace "acme-dev" belongs to tenant "acme"; only tenantry and cluster administrators (system:masters) may move it',
    );
    assert.equal(
      checkNamespaceUpdate(acmeNs, withLabels(acmeNs, { team: "x" }), bob, acme, identity),
      'metadata.labels[tenantry.dev/tenant]: namespace "acme-dev" belongs to tenant "acme"; only its owners, tenantry and cluster administrators (system:masters) may change it',
    );
    assert.equal(
      checkNamespaceUpdate(acmeNs, withLabels(acmeNs, { team: "x" }), alice, acme, identity),
      undefined,
    );
    assert.equal(
      checkNamespaceUpdate(
        acmeNs,
        withLabels(acmeNs, { "pod-security.kubernetes.io/enforce": "privileged" }),
        alice,
        acme,
        identity,
      ),
      'metadata.labels[pod-security.kubernetes.io/enforce]: set by tenantry on the namespaces of tenant "acme"; only tenantry and cluster administrators (system:masters) may change it',
    );
    assert.equal(
      checkNamespaceUpdate(
        acmeNs,
        withLabels(acmeNs, { "app.kubernetes.io/managed-by": undefined }),
        alice,
        acme,
        identity,
      ),
      'metadata.labels[app.kubernetes.io/managed-by]: set by tenantry on the namespaces of tenant "acme"; only tenantry and cluster administrators (system:masters) may change it',
    );
    const orphaned = { ...acmeNs, metadata: { ...acmeNs.metadata, ownerReferences: [] } };
    const owned = {
      ...acmeNs,
      metadata: { ...acmeNs.metadata, ownerReferences: [{ kind: "Tenant", name: "acme" }] },
    };
    assert.equal(
      checkNamespaceUpdate(owned, orphaned, alice, acme, identity),
      'metadata.ownerReferences: set by tenantry on the namespaces of tenant "acme"; only tenantry and cluster administrators (system:masters) may change them',
    );
    assert.equal(
      checkNamespaceUpdate(owned, orphaned, { username: "tenantry-admin" }, acme, identity),
      undefined,
    );
  });

  test("owners delete the namespaces they created; declared ones and other tenants' are refused", () => {
    assert.equal(checkNamespaceDelete(acmeNs, alice, acme, identity), undefined);
    assert.equal(
      checkNamespaceDelete(acmeNs, bob, acme, identity),
      'metadata.labels[tenantry.dev/tenant]: namespace "acme-dev" belongs to tenant "acme"; only its owners, tenantry and cluster administrators (system:masters) may delete it',
    );
    const declared = withLabels(acmeNs, { "tenantry.dev/namespace-origin": "declared" });
    assert.equal(
      checkNamespaceDelete(declared, alice, acme, identity),
      'metadata.labels[tenantry.dev/namespace-origin]: namespace "acme-dev" is declared in spec.namespaces of tenant "acme"; remove it there to delete it',
    );
    assert.equal(
      checkNamespaceDelete(
        declared,
        { username: "system:serviceaccount:kube-system:generic-garbage-collector" },
        acme,
        identity,
      ),
      undefined,
    );
    assert.equal(checkNamespaceDelete(namespace("scratch"), carol, undefined, identity), undefined);
  });
});
