// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${tenant}` is the template placeholder syntax.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ApiException, ApiextensionsV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import {
  installCrds,
  NAMESPACE_TEMPLATE_CRD,
  type NamespaceTemplate,
  TENANT_CRD,
  TENANT_RESOURCE_QUOTA_CRD,
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_CRDS,
  TENANTS_VERSION,
  type Tenant,
  type TenantResourceQuota,
} from "../../src/tenants/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";

const kubeConfig = testKubeConfig("home");
const kubeconfigPath = testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;
const customObjects = kubeConfig.makeApiClient(CustomObjectsApi);
const apiextensions = kubeConfig.makeApiClient(ApiextensionsV1Api);

const tenants = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: TENANT_CRD.spec.names.plural };
const quotas = {
  group: TENANTRY_GROUP,
  version: TENANTS_VERSION,
  plural: TENANT_RESOURCE_QUOTA_CRD.spec.names.plural,
};

/** Every object this file creates, deleted at the end: the cluster is shared with other tests. */
const created: { plural: string; name: string }[] = [];

function tenant(name: string, spec: Record<string, unknown>): Tenant {
  return { apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name }, spec } as Tenant;
}

interface StatusCause {
  field?: string;
  message?: string;
}

/** The Status object the API server answered a failed request with. */
function statusOf(err: unknown): { code: number; message: string; causes: StatusCause[] } {
  assert.ok(err instanceof ApiException, `expected an API error, got ${String(err)}`);
  const body = (typeof err.body === "string" ? JSON.parse(err.body) : err.body) as {
    message?: string;
    details?: { causes?: StatusCause[] };
  };
  return { code: err.code, message: body.message ?? "", causes: body.details?.causes ?? [] };
}

async function exists(plural: string, name: string): Promise<boolean> {
  try {
    await customObjects.getClusterCustomObject({
      group: TENANTRY_GROUP,
      version: TENANTS_VERSION,
      plural,
      name,
    });
    return true;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return false;
    throw err;
  }
}

async function run(args: string[], input?: string): Promise<string> {
  const result = await kubectl(kubeconfigPath, args, input);
  assert.equal(result.code, 0, `kubectl ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

describe("tenants CRDs on a real API server", () => {
  before(async () => {
    await installCrds(kubeConfig);
  });

  after(async () => {
    for (const { plural, name } of created) {
      await customObjects
        .deleteClusterCustomObject({ group: TENANTRY_GROUP, version: TENANTS_VERSION, plural, name })
        .catch((err: unknown) => {
          if (!(err instanceof ApiException && err.code === 404)) throw err;
        });
    }
  });

  it("installs idempotently: a second install changes no CRD", async () => {
    const generations = async () =>
      Promise.all(
        TENANTS_CRDS.map(async (crd) => {
          const stored = await apiextensions.readCustomResourceDefinition({ name: crd.metadata.name });
          const established = stored.status?.conditions?.find((c) => c.type === "Established")?.status;
          return `${crd.metadata.name} generation=${stored.metadata?.generation} established=${established}`;
        }),
      );
    const first = await generations();
    await installCrds(kubeConfig);
    assert.deepEqual(await generations(), first);
    for (const line of first) assert.match(line, /established=True$/);
  });

  it("kubectl get tenants prints owners, namespaces, quota, readiness and age", async () => {
    const name = uniqueName("tnt");
    await customObjects.createClusterCustomObject({
      ...tenants,
      body: tenant(name, {
        owners: [
          { kind: "User", name: "alice" },
          { kind: "Group", name: "devs" },
        ],
        quota: { hard: { pods: 20, cpu: "4" } },
        podSecurity: { level: "restricted" },
      }),
    });
    created.push({ plural: tenants.plural, name });

    // The tenant controller (running for the whole test run) fills the status the columns show.
    const fresh = await eventually(async () => {
      const out = await run(["get", "tenants", name]);
      const [header, row] = out.trimEnd().split("\n");
      assert.match(header ?? "", /^NAME\s+OWNERS\s+NAMESPACES\s+QUOTA\s+READY\s+AGE$/);
      assert.match(
        row ?? "",
        new RegExp(`^${name}\\s+User/alice, Group/devs\\s+0\\s+none used of 2 limits\\s+True\\s+\\d+s$`),
      );
      return out;
    });
    const filled = await run(["get", "tenants", name, "-o", "wide"]);
    const [wideHeader, wideRow] = filled.trimEnd().split("\n");
    assert.match(
      wideHeader ?? "",
      /^NAME\s+OWNERS\s+NAMESPACES\s+QUOTA\s+READY\s+AGE\s+POD SECURITY\s+CORDONED\s+REASON$/,
    );
    assert.match(wideRow ?? "", /\s+restricted\s+false\s+Reconciled$/);
    process.stdout.write(`${fresh}${filled}`);

    // The short name and the category work too.
    assert.match(
      await run(["get", "tnt", name, "-o", "name"]),
      new RegExp(`^tenant.tenantry.dev/${name}$`, "m"),
    );
    assert.match(
      await run(["get", "tenantry", "-o", "name"]),
      new RegExp(`^tenant.tenantry.dev/${name}$`, "m"),
    );
  });

  it("the API server fills in the safe defaults", async () => {
    const name = uniqueName("tnt-defaults");
    await customObjects.createClusterCustomObject({
      ...tenants,
      body: tenant(name, { owners: [{ kind: "User", name: "bob" }] }),
    });
    created.push({ plural: tenants.plural, name });
    const stored = (await customObjects.getClusterCustomObject({ ...tenants, name })) as Tenant;
    assert.deepEqual(stored.spec.networkIsolation, { enabled: true });
    assert.deepEqual(stored.spec.podSecurity, { level: "baseline" });
    assert.equal(stored.spec.cordoned, false);
    assert.deepEqual(stored.spec.allowed, {
      serviceTypes: ["ClusterIP"],
      externalIPs: false,
      privileged: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      hostPath: false,
      hostPorts: false,
      addedCapabilities: [],
      allowPrivilegeEscalation: false,
      requireRunAsNonRoot: false,
    });
  });

  const invalid: {
    name: string;
    spec: Record<string, unknown>;
    field: string;
    message: RegExp;
    tenantName?: string;
  }[] = [
    {
      name: "an unknown owner kind",
      spec: { owners: [{ kind: "Robot", name: "r2" }] },
      field: "spec.owners[0].kind",
      message: /Unsupported value: "Robot": supported values: "User", "Group", "ServiceAccount"/,
    },
    {
      name: "a negative namespaceQuota",
      spec: { owners: [{ kind: "User", name: "a" }], namespaceQuota: -1 },
      field: "spec.namespaceQuota",
      message: /should be greater than or equal to 0/,
    },
    {
      name: "a namespace name that is too long",
      spec: { owners: [{ kind: "User", name: "a" }], namespaces: [{ name: "n".repeat(70) }] },
      field: "spec.namespaces[0].name",
      message: /Too long: may not be more than 62/,
    },
    {
      name: "an unknown pod security level",
      spec: { owners: [{ kind: "User", name: "a" }], podSecurity: { level: "super" } },
      field: "spec.podSecurity.level",
      message: /Unsupported value: "super": supported values: "privileged", "baseline", "restricted"/,
    },
    {
      name: "no owners",
      spec: { owners: [] },
      field: "spec.owners",
      message: /should have at least 1 items/,
    },
    {
      name: "a ServiceAccount owner not in username form",
      spec: { owners: [{ kind: "ServiceAccount", name: "deployer" }] },
      field: "spec.owners[0].name",
      message: /system:serviceaccount:<namespace>:<name>/,
    },
    {
      name: "a tenant and namespace name that together exceed 63 characters",
      tenantName: uniqueName("t".repeat(30)),
      spec: { owners: [{ kind: "User", name: "a" }], namespaces: [{ name: "n".repeat(40) }] },
      field: "spec.namespaces",
      message: /must fit in 63 characters/,
    },
    {
      name: "both hard and quotaRef",
      spec: { owners: [{ kind: "User", name: "a" }], quota: { hard: { pods: 1 }, quotaRef: { name: "q" } } },
      field: "spec.quota",
      message: /set exactly one of hard and quotaRef/,
    },
    {
      name: "a quantity that is not one",
      spec: { owners: [{ kind: "User", name: "a" }], quota: { hard: { memory: "lots" } } },
      field: "spec.quota.hard.memory",
      message: /Invalid value: "lots"/,
    },
  ];

  for (const { name, spec, field, message, tenantName } of invalid) {
    it(`refuses ${name}, naming ${field}, and stores nothing`, async () => {
      const objectName = tenantName ?? uniqueName("tnt-bad");
      const err = await customObjects
        .createClusterCustomObject({ ...tenants, body: tenant(objectName, spec) })
        .then(
          () => {
            created.push({ plural: tenants.plural, name: objectName });
            return assert.fail("the API server accepted an invalid Tenant");
          },
          (e: unknown) => e,
        );
      const status = statusOf(err);
      assert.equal(status.code, 422, status.message);
      const cause = status.causes.find((c) => c.field === field);
      assert.ok(cause, `no cause names ${field}: ${status.message}`);
      assert.match(cause.message ?? "", message);
      assert.match(status.message, new RegExp(field.replace(/[.[\]]/g, "\\$&")));
      assert.equal(await exists(tenants.plural, objectName), false);
    });
  }

  it("kubectl explain shows the schema's descriptions", async () => {
    const text = await eventually(async () => {
      const out = (await run(["explain", "tenant.spec.owners"])).replace(/\s+/g, " ");
      assert.match(out, /Who administers the tenant: Users, Groups or ServiceAccounts\./);
      return out;
    });
    assert.match(text, /kind <string> -required-/);
    assert.match(text, /enum: User, Group, ServiceAccount/);
    const trq = (await run(["explain", "trq.spec.hard"])).replace(/\s+/g, " ");
    assert.match(trq, /Limits summed over every namespace of the tenant/);
  });

  it("kubectl get trq and nstpl print their columns; a quota's tenant cannot change", async () => {
    const name = uniqueName("trq");
    const quota: TenantResourceQuota = {
      apiVersion: TENANTS_API_VERSION,
      kind: "TenantResourceQuota",
      metadata: { name },
      spec: {
        tenant: "tenant-a",
        hard: { pods: 20, "requests.dummy/dummyResource": 100, "count/deployments.apps": 5 },
        scopeSelector: {
          matchExpressions: [{ scopeName: "PriorityClass", operator: "In", values: ["common"] }],
        },
      },
    };
    await customObjects.createClusterCustomObject({ ...quotas, body: quota });
    created.push({ plural: quotas.plural, name });
    await run([
      "patch",
      "trq",
      name,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({
        status: {
          summary: "pods:3/20",
          used: { pods: 3 },
          reserved: { pods: "1" },
          reservations: [
            {
              id: "4f9d1c2e-0000-4000-8000-000000000001",
              namespace: "tenant-a-ns-1",
              resource: "pods",
              name: "web-0",
              amounts: { pods: "1" },
              expiresAt: "2030-01-01T00:00:00Z",
            },
          ],
        },
      }),
    ]);
    const storedQuota = JSON.parse(await run(["get", "trq", name, "-o", "json"])) as TenantResourceQuota;
    assert.deepEqual(
      storedQuota.status?.reservations?.[0]?.amounts,
      { pods: "1" },
      "reservations are kept, not pruned",
    );
    // The quota controller recounts usage (no namespaces of tenant-a exist: all zero) and keeps the
    // reservation, whose object it has not seen and which has not expired.
    await eventually(async () => {
      const out = await run(["get", "trq", name]);
      const [header, row] = out.trimEnd().split("\n");
      assert.match(header ?? "", /^NAME\s+TENANT\s+USAGE\s+AGE$/);
      assert.match(row ?? "", new RegExp(`^${name}\\s+tenant-a\\s+none used of 3 limits\\s+\\d+s$`));
      const counted = JSON.parse(await run(["get", "trq", name, "-o", "json"])) as TenantResourceQuota;
      assert.equal(counted.status?.reservations?.length, 1);
      assert.deepEqual(counted.status?.reserved, { pods: "1" });
    });

    const moved = await kubectl(kubeconfigPath, [
      "patch",
      "trq",
      name,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { tenant: "tenant-b" } }),
    ]);
    assert.notEqual(moved.code, 0);
    assert.match(moved.stderr, /spec\.tenant: Invalid value: "string": spec\.tenant cannot be changed/);

    const templateName = uniqueName("nstpl");
    await run(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceTemplate",
        metadata: { name: templateName },
        spec: {
          objects: [
            {
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: "${tenant}-settings" },
              data: { a: "b" },
            },
          ],
        },
      }),
    );
    created.push({ plural: NAMESPACE_TEMPLATE_CRD.spec.names.plural, name: templateName });
    const templates = await run(["get", "nstpl", templateName]);
    assert.match(templates.split("\n")[0] ?? "", /^NAME\s+NAMESPACES\s+READY\s+AGE$/);
    const stored = JSON.parse(await run(["get", "nstpl", templateName, "-o", "json"])) as NamespaceTemplate;
    assert.deepEqual(stored.spec.objects[0]?.data, { a: "b" }, "unknown fields of template objects are kept");
  });
});
