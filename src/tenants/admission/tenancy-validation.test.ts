// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${namespace}` is the template placeholder syntax.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Namespace } from "@kubernetes/client-node";
import type { NamespaceTemplate } from "../api/namespace-template.js";
import type { Tenant } from "../api/tenant.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";
import { tenantryIdentity } from "./identity.js";
import {
  type KindScope,
  quotaFindings,
  snapshotTenancyState,
  templateFindings,
  tenantFindings,
} from "./tenancy-validation.js";

const identity = tenantryIdentity("tenantry-admin", "tenantry-system");

function tenant(name: string, spec: Partial<Tenant["spec"]> = {}): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name },
    spec: { owners: [{ kind: "User", name: "alice" }], ...spec },
  } as Tenant;
}

function quota(name: string, spec: Partial<TenantResourceQuota["spec"]>): TenantResourceQuota {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "TenantResourceQuota",
    metadata: { name },
    spec: { tenant: "acme", hard: { pods: "10" }, ...spec },
  } as TenantResourceQuota;
}

const namespace = (name: string, tenantName: string): V1Namespace => ({
  metadata: { name, labels: { "tenantry.dev/tenant": tenantName } },
});

type Snapshot = Parameters<typeof snapshotTenancyState>[0];
const empty: Snapshot = {};
const tenantFindingsIn = (t: Tenant, snapshot: Snapshot, id: typeof identity) =>
  tenantFindings(t, snapshotTenancyState(snapshot), id);
const quotaFindingsIn = (q: TenantResourceQuota, snapshot: Snapshot, id: typeof identity) =>
  quotaFindings(q, snapshotTenancyState(snapshot), id);

describe("Tenant", () => {
  test("a well-formed tenant passes", () => {
    assert.deepEqual(tenantFindingsIn(tenant("acme", { namespaces: [{ name: "dev" }] }), empty, identity), {
      violations: [],
      warnings: [],
    });
  });

  test("owners: the same one twice, a service account as a User, a group of everyone", () => {
    const findings = tenantFindingsIn(
      tenant("acme", {
        owners: [
          { kind: "User", name: "system:serviceaccount:ci:deployer" },
          { kind: "ServiceAccount", name: "system:serviceaccount:ci:deployer" },
          { kind: "Group", name: "system:authenticated" },
        ],
      }),
      empty,
      identity,
    );
    assert.deepEqual(findings.violations, [
      'spec.owners[0].kind: "system:serviceaccount:ci:deployer" is a service account\'s username; use kind ServiceAccount',
      'spec.owners[1]: ServiceAccount "system:serviceaccount:ci:deployer" is the same owner as spec.owners[0]',
      'spec.owners[2].name: group "system:authenticated" contains every user; name a narrower group',
    ]);
  });

  test("schema violations come first, with their field", () => {
    const findings = tenantFindingsIn(
      tenant("acme", {
        owners: [
          { kind: "User", name: "a" },
          { kind: "User", name: "a" },
        ],
      }),
      empty,
      identity,
    );
    assert.deepEqual(findings.violations, ['spec.owners[1]: Duplicate value: kind="User", name="a"']);
  });

  test("class regexes must compile", () => {
    const findings = tenantFindingsIn(
      tenant("acme", { allowed: { storageClasses: { regex: "gold-(" } } }),
      empty,
      identity,
    );
    assert.equal(findings.violations.length, 1);
    assert.match(
      findings.violations[0]!,
      /^spec\.allowed\.storageClasses\.regex: "gold-\(" is not a valid regular expression \(.+\)$/,
    );
  });

  test("quotaRef names a tenant-wide quota of this tenant; one not there yet is a warning", () => {
    const state = {
      ...empty,
      quotas: [quota("theirs", { tenant: "beta" }), quota("bobs", { user: "bob" }), quota("ours", {})],
    };
    const ref = (name: string) => tenant("acme", { quota: { quotaRef: { name } } });
    assert.deepEqual(tenantFindingsIn(ref("theirs"), state, identity).violations, [
      'spec.quota.quotaRef.name: TenantResourceQuota "theirs" belongs to tenant "beta", not "acme"',
    ]);
    assert.deepEqual(tenantFindingsIn(ref("bobs"), state, identity).violations, [
      'spec.quota.quotaRef.name: TenantResourceQuota "bobs" is the quota of user "bob"; name a tenant-wide one',
    ]);
    assert.deepEqual(tenantFindingsIn(ref("ours"), state, identity), { violations: [], warnings: [] });
    assert.deepEqual(tenantFindingsIn(ref("later"), state, identity), {
      violations: [],
      warnings: ['spec.quota.quotaRef.name: TenantResourceQuota "later" does not exist yet'],
    });
  });

  test("declared namespaces may not be system namespaces nor another tenant's", () => {
    const state = {
      ...empty,
      tenants: [tenant("acme-x", { namespaces: [{ name: "y" }] })],
      namespaces: [namespace("acme-taken", "other")],
    };
    const findings = tenantFindingsIn(tenant("kube", { namespaces: [{ name: "system" }] }), state, identity);
    assert.deepEqual(findings.violations, [
      'spec.namespaces[0].name: "kube-system" is a system namespace and cannot belong to a tenant',
    ]);
    assert.deepEqual(
      tenantFindingsIn(tenant("acme", { namespaces: [{ name: "taken" }, { name: "x-y" }] }), state, identity)
        .violations,
      [
        'spec.namespaces[0].name: namespace "acme-taken" already belongs to tenant "other"',
        'spec.namespaces[1].name: namespace "acme-x-y" is declared by tenant "acme-x"',
      ],
    );
  });

  test("templates not there yet are a warning", () => {
    assert.deepEqual(
      tenantFindingsIn(tenant("acme", { templates: [{ name: "base" }] }), empty, identity).warnings,
      ['spec.templates[0].name: NamespaceTemplate "base" does not exist yet'],
    );
  });
});

describe("NamespaceTemplate", () => {
  const scopes: Record<string, boolean> = {
    "v1/ConfigMap": true,
    "rbac.authorization.k8s.io/v1/RoleBinding": true,
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": false,
  };
  const scope: KindScope = async (apiVersion, kind) => scopes[`${apiVersion}/${kind}`];
  const template = (objects: unknown[], parameters?: { name: string }[]) =>
    ({
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "NamespaceTemplate",
      metadata: { name: "t" },
      spec: { objects, ...(parameters ? { parameters } : {}) },
    }) as NamespaceTemplate;
  const configMap = (name: string, extra: Record<string, unknown> = {}) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name },
    ...extra,
  });

  test("namespaced objects with declared parameters pass", async () => {
    const findings = await templateFindings(
      template(
        [
          configMap("${tenant}-info", {
            metadata: { name: "info", namespace: "${namespace}" },
            data: { url: "${url}" },
          }),
        ],
        [{ name: "url" }],
      ),
      scope,
    );
    assert.deepEqual(findings, { violations: [], warnings: [] });
  });

  test("cluster-scoped and unknown kinds, foreign namespaces, reserved labels, undeclared parameters, duplicates", async () => {
    const findings = await templateFindings(
      template([
        { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "x" } },
        { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } },
        configMap("a", { metadata: { name: "a", namespace: "kube-system" } }),
        configMap("b", { metadata: { name: "b", labels: { "tenantry.dev/tenant": "other" } } }),
        configMap("c", { data: { "my.key": "${nope}" } }),
        configMap("c"),
        { apiVersion: "v1", kind: "ConfigMap", metadata: {} },
      ]),
      scope,
    );
    assert.deepEqual(findings.violations, [
      "spec.objects[0].kind: ClusterRoleBinding is cluster-scoped; a template holds namespaced objects only",
      "spec.objects[1].kind: the API server serves no kind Widget in example.com/v1",
      'spec.objects[2].metadata.namespace: leave it out: objects are created in each tenant namespace, not "kube-system"',
      "spec.objects[3].metadata.labels[tenantry.dev/tenant]: labels under tenantry.dev/ are set by tenantry",
      "spec.objects[4].data[my.key]: ${nope} is neither a built-in parameter (tenant, namespace) nor declared in spec.parameters",
      'spec.objects[5]: ConfigMap "c" is already spec.objects[4]',
      "spec.objects[6].metadata.name: required",
    ]);
  });
});

describe("TenantResourceQuota", () => {
  const state: Snapshot = {
    ...empty,
    tenants: [tenant("acme", { users: [{ name: "bob" }] })],
    namespaces: [namespace("acme-a", "acme"), namespace("acme-b", "acme"), namespace("beta-a", "beta")],
  };

  test("per-namespace quotas within hard pass", () => {
    const q = quota("q", {
      hard: { pods: "10", "requests.cpu": "4" },
      namespaceQuotas: [
        { namespace: "acme-a", hard: { pods: "6", "requests.cpu": "2" } },
        { namespace: "acme-b", hard: { pods: "4", "requests.cpu": "2000m", "count/configmaps": "5" } },
      ],
    });
    assert.deepEqual(quotaFindingsIn(q, state, identity), { violations: [], warnings: [] });
  });

  test("one namespace over hard, the sum over hard, another tenant's or a system namespace", () => {
    const q = quota("q", {
      hard: { pods: "10", "requests.cpu": "4" },
      namespaceQuotas: [
        { namespace: "acme-a", hard: { pods: "12" } },
        { namespace: "acme-b", hard: { pods: "4", "requests.cpu": "4500m" } },
        { namespace: "beta-a", hard: { "requests.cpu": "1" } },
        { namespace: "kube-system", hard: { "requests.cpu": "1" } },
      ],
    });
    assert.deepEqual(quotaFindingsIn(q, state, identity).violations, [
      "spec.namespaceQuotas[0].hard[pods]: 12 is more than spec.hard[pods] (10)",
      "spec.namespaceQuotas[1].hard[requests.cpu]: 4500m is more than spec.hard[requests.cpu] (4)",
      'spec.namespaceQuotas[2].namespace: namespace "beta-a" belongs to tenant "beta", not "acme"',
      'spec.namespaceQuotas[3].namespace: "kube-system" is a system namespace, not a namespace of tenant "acme"',
      "spec.namespaceQuotas: pods adds up to more than spec.hard[pods] (10) over 2 namespaces (acme-a: 12, acme-b: 4)",
      "spec.namespaceQuotas: requests.cpu adds up to more than spec.hard[requests.cpu] (4) over 3 namespaces (acme-b: 4500m, beta-a: 1, kube-system: 1)",
    ]);
  });

  test("a tenant, user or namespace not there yet is a warning", () => {
    const q = quota("q", {
      tenant: "later",
      user: "carol",
      namespaceQuotas: [{ namespace: "later-a", hard: { pods: "1" } }],
    });
    assert.deepEqual(quotaFindingsIn(q, state, identity), {
      violations: [],
      warnings: [
        'spec.tenant: tenant "later" does not exist yet',
        'spec.namespaceQuotas[0].namespace: "later-a" is not a namespace of tenant "later" yet',
      ],
    });
    const unknownUser = quota("q", { user: "carol" });
    assert.deepEqual(quotaFindingsIn(unknownUser, state, identity).warnings, [
      'spec.user: "carol" is not in spec.users of tenant "acme"',
    ]);
  });
});
