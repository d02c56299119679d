// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${name}` is the template placeholder syntax, not a mistaken template literal.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Value } from "@sinclair/typebox/value";
import { validateNamespaceTemplate, validateTenant, validateTenantResourceQuota } from "./crds.js";
import { TENANTS_API_VERSION } from "./group.js";
import { type NamespaceTemplate, NamespaceTemplateSchema } from "./namespace-template.js";
import { formatOwnerSummary, formatUsageSummary } from "./summary.js";
import { type Tenant, TenantSchema } from "./tenant.js";
import { type TenantResourceQuota, TenantResourceQuotaSchema } from "./tenant-resource-quota.js";

const fullTenant: Tenant = {
  apiVersion: TENANTS_API_VERSION,
  kind: "Tenant",
  metadata: { name: "tenant-a" },
  spec: {
    owners: [
      { kind: "User", name: "alice" },
      { kind: "Group", name: "devs" },
      { kind: "ServiceAccount", name: "system:serviceaccount:ci:deployer" },
    ],
    namespaces: [
      {
        name: "ns-1",
        templates: [{ name: "restricted", parameters: { team: "blue" } }],
        labels: { env: "prod" },
      },
      { name: "ns-2" },
    ],
    templates: [{ name: "base" }],
    namespaceQuota: 3,
    namespacePrefix: "acme-",
    quota: {
      hard: {
        cpu: "400",
        memory: "1000Gi",
        pods: 500,
        "requests.dummy/dummyResource": 100,
        "count/deployments.apps": 20,
      },
    },
    limitRanges: [
      {
        name: "defaults",
        limits: [
          {
            type: "Container",
            default: { cpu: "500m", memory: "512Mi" },
            defaultRequest: { cpu: "100m", memory: "128Mi" },
            max: { cpu: "2" },
          },
        ],
      },
    ],
    networkIsolation: {
      enabled: true,
      allowFromNamespaces: [
        { matchLabels: { "kubernetes.io/metadata.name": "ingress-nginx" } },
        { matchExpressions: [{ key: "monitoring", operator: "Exists" }] },
      ],
    },
    nodePool: {
      nodeSelector: { pool: "tenant-a" },
      tolerations: [{ key: "dedicated", operator: "Equal", value: "tenant-a", effect: "NoSchedule" }],
    },
    podSecurity: { level: "restricted" },
    allowed: {
      storageClasses: { names: ["fast", "standard"] },
      ingressClasses: { regex: "^nginx-.*$" },
      priorityClasses: { names: [] },
      serviceTypes: ["ClusterIP", "LoadBalancer"],
      externalIPs: false,
      privileged: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      hostPath: false,
      hostPorts: false,
      addedCapabilities: ["NET_BIND_SERVICE"],
      allowPrivilegeEscalation: false,
      requireRunAsNonRoot: true,
    },
    users: [
      {
        name: "user-1",
        permissions: [
          {
            apiGroups: ["stable.example.com", ""],
            resources: ["secrets", "pods"],
            verbs: ["get", "watch", "list"],
          },
        ],
        quota: { hard: { cpu: "100", memory: "500Gi", pods: "100", "requests.dummy/dummyResource": 20 } },
      },
    ],
    cordoned: false,
  },
  status: {
    observedGeneration: 2,
    conditions: [
      {
        type: "Ready",
        status: "True",
        reason: "Reconciled",
        message: "",
        lastTransitionTime: "2025-01-01T10:00:00Z",
        observedGeneration: 2,
      },
    ],
    namespaces: ["tenant-a-ns-1", "tenant-a-ns-2"],
    namespaceCount: 2,
    ownerSummary: "User/alice, Group/devs, ServiceAccount/ci/deployer",
    usage: {
      hard: { cpu: "400", pods: 500 },
      used: { cpu: "1500m", pods: 3 },
      summary: "cpu: 1500m/400, pods: 3/500",
    },
  },
};

const template: NamespaceTemplate = {
  apiVersion: TENANTS_API_VERSION,
  kind: "NamespaceTemplate",
  metadata: { name: "restricted" },
  spec: {
    parameters: [{ name: "team", default: "blue", description: "Team owning the namespace" }],
    objects: [
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "${tenant}-psp", annotations: { team: "${team}" } },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "use-psp:restricted" },
        subjects: [
          {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "Group",
            name: "system:serviceaccounts:${namespace}",
          },
        ],
      },
      {
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: "multitenancy-default" },
        spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"] },
      },
    ],
  },
  status: { observedGeneration: 1, namespaceCount: 4 },
};

const quota: TenantResourceQuota = {
  apiVersion: TENANTS_API_VERSION,
  kind: "TenantResourceQuota",
  metadata: { name: "tenant-a-resource-quota" },
  spec: {
    tenant: "tenant-a",
    hard: { cpu: "400", memory: "1000Gi", pods: "500", "requests.dummy/dummyResource": 100 },
    scopes: ["NotTerminating"],
    scopeSelector: { matchExpressions: [{ operator: "In", scopeName: "PriorityClass", values: ["common"] }] },
    namespaceQuotas: [
      {
        namespace: "tenant-a-ns-1",
        hard: {
          "limits.cpu": "200",
          "limits.memory": "700Gi",
          pods: 300,
          "requests.dummy/dummyResource": 75,
        },
      },
    ],
  },
  status: {
    observedGeneration: 1,
    hard: { pods: "500" },
    used: { pods: 3 },
    reserved: { pods: 1 },
    reservations: [
      {
        id: "0b6f5a7e-3c1d-4f7a-9d2e-1a2b3c4d5e6f",
        namespace: "tenant-a-ns-1",
        resource: "pods",
        name: "web-0",
        amounts: { pods: "1", "requests.cpu": "100m" },
        expiresAt: "2025-01-01T10:00:30Z",
      },
    ],
    namespaces: [{ namespace: "tenant-a-ns-1", used: { pods: 3 } }],
    summary: "pods: 3/500",
  },
};

/** Deep copy of `base` with `change` applied to it. */
function variant<T>(base: T, change: (copy: T) => void): T {
  const copy = structuredClone(base);
  change(copy);
  return copy;
}

describe("full examples", () => {
  it("pass TypeBox's Value.Check", () => {
    assert.deepEqual([...Value.Errors(TenantSchema, fullTenant)], []);
    assert.deepEqual([...Value.Errors(NamespaceTemplateSchema, template)], []);
    assert.deepEqual([...Value.Errors(TenantResourceQuotaSchema, quota)], []);
  });

  it("pass the structural schema the API server uses", () => {
    assert.deepEqual(validateTenant(fullTenant), []);
    assert.deepEqual(validateNamespaceTemplate(template), []);
    assert.deepEqual(validateTenantResourceQuota(quota), []);
  });

  it("a minimal tenant needs only an owner", () => {
    const minimal = {
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name: "t" },
      spec: { owners: [{ kind: "User", name: "bob" }] },
    };
    assert.equal(Value.Check(TenantSchema, minimal), true);
    assert.deepEqual(validateTenant(minimal), []);
  });
});

describe("invalid tenants", () => {
  // typeBoxToo is false where only the structural schema can tell: TypeBox knows no list-map keys.
  const cases: {
    name: string;
    change: (t: Tenant) => void;
    field: string;
    message: RegExp;
    typeBoxToo?: false;
  }[] = [
    {
      name: "unknown owner kind",
      change: (t) => {
        (t.spec.owners[0] as { kind: string }).kind = "Robot";
      },
      field: "spec.owners[0].kind",
      message: /^Unsupported value: "Robot": supported values: "User", "Group", "ServiceAccount"$/,
    },
    {
      name: "negative namespaceQuota",
      change: (t) => {
        t.spec.namespaceQuota = -1;
      },
      field: "spec.namespaceQuota",
      message: /^Invalid value: -1: should be greater than or equal to 0$/,
    },
    {
      name: "namespace name too long",
      change: (t) => {
        t.spec.namespaces![0]!.name = "n".repeat(70);
      },
      field: "spec.namespaces[0].name",
      message: /^Too long: may not be more than 62 bytes$/,
    },
    {
      name: "unknown pod security level",
      change: (t) => {
        (t.spec.podSecurity as { level: string }).level = "super";
      },
      field: "spec.podSecurity.level",
      message: /^Unsupported value: "super"/,
    },
    {
      name: "no owners",
      change: (t) => {
        t.spec.owners = [];
      },
      field: "spec.owners",
      message: /^Invalid value: 0: should have at least 1 items$/,
    },
    {
      name: "the same owner twice",
      change: (t) => {
        t.spec.owners.push({ kind: "User", name: "alice" });
      },
      field: "spec.owners[3]",
      message: /^Duplicate value: kind="User", name="alice"$/,
      typeBoxToo: false,
    },
    {
      name: "a quantity that is not one",
      change: (t) => {
        t.spec.quota!.hard!.memory = "lots";
      },
      field: "spec.quota.hard.memory",
      message: /^Invalid value: "lots": should match/,
    },
    {
      name: "a negative integer quantity",
      change: (t) => {
        t.spec.users![0]!.quota!.hard.pods = -5;
      },
      field: "spec.users[0].quota.hard.pods",
      message: /^Invalid value: -5: should be greater than or equal to 0$/,
    },
    {
      name: "an unknown service type",
      change: (t) => {
        (t.spec.allowed!.serviceTypes as string[]).push("Headless");
      },
      field: "spec.allowed.serviceTypes[2]",
      message: /^Unsupported value: "Headless"/,
    },
    {
      name: "a toleration with a bad effect",
      change: (t) => {
        (t.spec.nodePool!.tolerations![0] as { effect: string }).effect = "Sometimes";
      },
      field: "spec.nodePool.tolerations[0].effect",
      message: /^Unsupported value: "Sometimes"/,
    },
    {
      name: "a tenant name that is not a DNS label",
      change: (t) => {
        t.metadata.name = "Tenant.A";
      },
      field: "metadata.name",
      message: /^Invalid value: "Tenant.A": should match/,
    },
  ];

  for (const { name, change, field, message, typeBoxToo = true } of cases) {
    it(`refuses ${name}, naming ${field}`, () => {
      const bad = variant(fullTenant, change);
      const violations = validateTenant(bad);
      assert.equal(violations.length, 1, JSON.stringify(violations));
      assert.equal(violations[0]?.field, field);
      assert.match(violations[0]?.message ?? "", message);
      if (typeBoxToo) assert.equal(Value.Check(TenantSchema, bad), false, "TypeBox refuses it too");
    });
  }

  it("TypeBox reports the same field as a JSON pointer", () => {
    const bad = variant(fullTenant, (t) => {
      (t.spec.owners[0] as { kind: string }).kind = "Robot";
    });
    assert.deepEqual(
      [...Value.Errors(TenantSchema, bad)].map((e) => e.path),
      ["/spec/owners/0/kind"],
    );
  });
});

describe("invalid templates and quotas", () => {
  it("refuses template objects without apiVersion or kind and bad parameter names", () => {
    const bad = variant(template, (t) => {
      t.spec.parameters![0]!.name = "bad-name";
      delete (t.spec.objects[1] as { kind?: string }).kind;
    });
    assert.deepEqual(
      validateNamespaceTemplate(bad).map((v) => v.field),
      ["spec.objects[1].kind", "spec.parameters[0].name"],
    );
  });

  it("refuses unknown quota scopes and scope operators", () => {
    const bad = variant(quota, (q) => {
      (q.spec.scopes as string[]).push("Everything");
      (q.spec.scopeSelector!.matchExpressions[0] as { operator: string }).operator = "Like";
    });
    assert.deepEqual(
      validateTenantResourceQuota(bad).map((v) => v.field),
      ["spec.scopeSelector.matchExpressions[0].operator", "spec.scopes[1]"],
    );
  });
});

describe("summaries", () => {
  it("formats owners and usage for kubectl get", () => {
    assert.equal(
      formatOwnerSummary(fullTenant.spec.owners),
      "User/alice, Group/devs, ServiceAccount/ci/deployer",
    );
    assert.equal(formatUsageSummary({ pods: 20, cpu: "4" }, { pods: 3 }), "pods 15%, cpu 0%");
    assert.equal(formatUsageSummary(undefined, undefined), "-");
    assert.equal(formatUsageSummary({ pods: 20 }, {}), "none used of 1 limit");
  });

  it("a usage summary stays one short line however many resources are limited", () => {
    const hard = Object.fromEntries(
      [...Array(15).keys()].map((i) => [`count/things${String(i).padStart(2, "0")}.example.com`, "100"]),
    );
    const summary = formatUsageSummary(
      { ...hard, pods: "20", "requests.cpu": "8", "requests.memory": "16Gi", "services.nodeports": "0" },
      { pods: "19", "requests.cpu": "300m", "requests.memory": "384Mi", "count/things03.example.com": "1" },
    );
    assert.equal(summary, "pods 95% (19/20), requests.cpu 3%, requests.memory 2%, +16 more");
    assert.ok(summary.length < 80);
    // A forbidden resource (limit 0) counts only once something uses it; a tiny share is not "0%".
    assert.equal(
      formatUsageSummary({ "services.nodeports": "0", cpu: "1000" }, { "services.nodeports": "1", cpu: "1" }),
      "services.nodeports 100% (1/0), cpu <1%",
    );
    assert.equal(formatUsageSummary({ cpu: "4" }, { cpu: "lots" }), "cpu lots/4");
  });
});
