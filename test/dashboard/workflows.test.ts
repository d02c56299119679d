/**
 * A tenant admin's and an operator's daily work in the dashboard, in Chromium: creating a tenant,
 * granting access, each user's usage, peerings and virtual nodes, offloaded namespaces, a logical
 * cloud's kubeconfig, a runtime's backup and deletion, and the monitor's alerts. Every refusal is
 * the API's own, shown next to the field (or on the row) it concerns; axe-core checks every page.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesObject,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import type { Browser, Page } from "playwright-core";
import { LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { cloudPath, cloudsApi, createCloud, removeProject, statusBecomes } from "../clouds/support.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import {
  createTestUser,
  sharedBuiltinIdentity,
  stopSharedBuiltinIdentity,
  tokenKubeconfig,
} from "../support/identity.js";
import { clusterClient, removeObject } from "../support/runtimes.js";
import { assertAccessible, dashboardUrl, launchBrowser, loggedIn, open, shot } from "./support.js";

const kc = testKubeConfig("home");
const custom = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const home = clusterClient("home");
const group = "tenantry.dev";
const version = "v1alpha1";

const prefix = uniqueName("dashw");
const mine = `${prefix}-mine`;
const dev = `${mine}-dev`;
const owner = `${prefix}-owner`;
const operator = `${prefix}-op`;
const operatorsGroup = `${prefix}:operators`;
const password = "dashboard-work-password";
const service = `${prefix}-echo`;
const project = `${prefix}-proj`;
const cloud = `${prefix}-admin`;
const rule = `${prefix}-pending`;

/** A client of the home cluster as the owner (their identity token, straight to the API server). */
async function asOwner(): Promise<CoreV1Api> {
  const { token } = await (await sharedBuiltinIdentity()).login({ username: owner, password });
  const userKc = new KubeConfig();
  userKc.loadFromFile(tokenKubeconfig(token));
  return userKc.makeApiClient(CoreV1Api);
}

/** The session's CSRF token, for calling the dashboard's API from the page's context as a script would. */
async function csrfOf(page: Page): Promise<string> {
  return ((await (await page.request.get(`${dashboardUrl()}/api/session`)).json()) as { csrf: string }).csrf;
}

describe("daily work in the web dashboard", () => {
  let browser: Browser;

  before(async () => {
    await custom.createClusterCustomObject({
      group,
      version,
      plural: "tenants",
      body: {
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name: mine },
        spec: {
          owners: [{ kind: "User", name: owner }],
          namespaces: [{ name: "dev" }],
          namespaceQuota: 3,
          quota: { hard: { pods: "10" } },
        },
      },
    });
    await createTestUser({ name: owner, password, tenant: mine, tenantAdmin: true });
    await createTestUser({ name: operator, password, groups: [operatorsGroup] });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `${prefix}-operators` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: operatorsGroup }],
      },
    });
    await eventually(async () =>
      assert.equal((await core.readNamespace({ name: dev })).status?.phase, "Active"),
    );
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await custom
      .deleteClusterCustomObject({ group, version, plural: "monitorrules", name: rule })
      .catch(() => undefined);
    for (const runtime of (await home.objects.list(TENANTS_API_VERSION, "Runtime"))
      .items as (KubernetesObject & {
      spec: { service: string };
    })[]) {
      if (runtime.spec.service === service) await removeObject(home, runtime);
    }
    await removeObject(home, {
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeService",
      metadata: { name: service },
    });
    await removeProject(project, [cloud]).catch(() => undefined);
    await rbac.deleteClusterRoleBinding({ name: `${prefix}-operators` }).catch(() => undefined);
    for (const name of [mine, `${prefix}-new`])
      await custom
        .deleteClusterCustomObject({ group, version, plural: "tenants", name })
        .catch(() => undefined);
    await stopSharedBuiltinIdentity();
  });

  it("lets an operator create a tenant, refusing bad input next to its field; an owner may not", async () => {
    const page = await loggedIn(browser, operator, password);
    const form = page.getByRole("form", { name: "Create a tenant" });
    await form.getByLabel("Tenant name").fill(`${prefix}-new`);
    await form.getByLabel("Owner name").fill(`${prefix}-someone`);
    await form.getByLabel("Quota", { exact: true }).fill("pods=lots");
    await form.getByRole("button", { name: "Create tenant" }).click();
    const quotaError = page.locator("#create-tenant-quota-error");
    await quotaError.waitFor();
    assert.match(await quotaError.innerText(), /spec\.quota\.hard\.pods/);
    assert.equal(await form.getByLabel("Quota", { exact: true }).getAttribute("aria-invalid"), "true");
    await assertAccessible(page, "the overview with a refused tenant");

    await form.getByLabel("Quota", { exact: true }).fill("pods=5");
    await form.getByRole("button", { name: "Create tenant" }).click();
    await form.getByRole("status").waitFor();
    const created = (await custom.getClusterCustomObject({
      group,
      version,
      plural: "tenants",
      name: `${prefix}-new`,
    })) as { spec: { owners: unknown[]; quota: { hard: Record<string, string> } } };
    assert.deepEqual(created.spec.owners, [{ kind: "User", name: `${prefix}-someone` }]);
    assert.equal(created.spec.quota.hard.pods, "5");
    await page.getByLabel("Filter by name").fill(`${prefix}-new`);
    await page.getByRole("link", { name: `${prefix}-new` }).waitFor();
    await page.context().close();

    const ownerPage = await loggedIn(browser, owner, password);
    assert.equal(await ownerPage.getByRole("form", { name: "Create a tenant" }).count(), 0);
    const refused = await ownerPage.request.post(`${dashboardUrl()}/api/tenants`, {
      data: { name: `${prefix}-sneaky`, ownerName: owner },
      headers: { "x-csrf-token": await csrfOf(ownerPage) },
    });
    assert.equal(refused.status(), 403, await refused.text());
    assert.match((await refused.json()).detail, /forbidden|cannot/i);
    await ownerPage.context().close();
  });

  it("shows the owner each user's usage and lets them grant and revoke access, refusals next to the field", async () => {
    await (await asOwner()).createNamespacedPod({
      namespace: dev,
      body: {
        metadata: { name: "web" },
        spec: {
          containers: [
            {
              name: "web",
              image: "nginx",
              resources: {
                requests: { cpu: "100m", memory: "64Mi" },
                limits: { cpu: "100m", memory: "64Mi" },
              },
            },
          ],
        },
      },
    });
    const page = await loggedIn(browser, owner, password);
    await page.getByRole("link", { name: mine }).click();
    await page.getByRole("heading", { name: `Tenant ${mine}`, level: 1 }).waitFor();
    // The pod's user label names the owner: their row, with what the pod requests.
    await eventually(async () =>
      assert.deepEqual(await page.locator("table.usage tbody tr").first().locator("th, td").allInnerTexts(), [
        owner,
        "1",
        "100m",
        "64Mi",
      ]),
    );

    await page.getByLabel("Filter namespaces").fill("-dev");
    await eventually(async () =>
      assert.deepEqual(await page.locator("table.namespaces tbody th").allInnerTexts(), [dev]),
    );

    const form = page.getByRole("form", { name: "Grant access" });
    await form.getByLabel("In namespace").selectOption(dev);
    await form.getByLabel("Grant name").fill("read-config");
    await form.getByLabel("Grantee name").fill(`${prefix}-friend`);
    // tenantry.dev is never grantable: the API server's own refusal, next to the API groups.
    await form.getByLabel("API groups").fill("tenantry.dev");
    await form.getByLabel("Resources").fill("tenants");
    await form.getByLabel("Verbs").fill("get");
    await form.getByRole("button", { name: "Grant access" }).click();
    const groupsError = page.locator("#grant-access-apiGroups-error");
    await groupsError.waitFor();
    assert.match(await groupsError.innerText(), /apiGroups/);

    // Nobody hands out what they do not hold: tenantry's admission, next to the resources.
    await form.getByLabel("API groups").fill("core");
    await form.getByLabel("Resources").fill("nodes");
    await form.getByRole("button", { name: "Grant access" }).click();
    const rulesError = page.locator("#grant-access-resources-error");
    await rulesError.waitFor();
    assert.match(await rulesError.innerText(), /you may not grant "get nodes"/);
    await assertAccessible(page, "the tenant page with a refused grant");

    await form.getByLabel("Resources").fill("configmaps");
    await form.getByLabel("Verbs").fill("get,list");
    await form.getByRole("button", { name: "Grant access" }).click();
    const row = page.locator("table.grants tbody tr", { hasText: "read-config" });
    await row.waitFor();
    assert.match(await row.innerText(), new RegExp(`User ${prefix}-friend[\\s\\S]*get,list configmaps`));
    await shot(page, "tenant-access");

    // Revoked from its row: the grant is deleted as the owner, and the row goes.
    await page.getByRole("button", { name: `Revoke read-config in ${dev}` }).click();
    await eventually(async () => assert.equal(await row.count(), 0));
    await assert.rejects(
      custom.getNamespacedCustomObject({
        group,
        version,
        namespace: dev,
        plural: "accessgrants",
        name: "read-config",
      }),
    );
    await page.context().close();
  });

  it("shows an operator the peerings and their virtual nodes; an owner is told they may not", async () => {
    const page = await loggedIn(browser, operator, password);
    await open(page, "Clusters", "Clusters");
    const peerings = page.locator("table.peerings tbody tr");
    await eventually(async () =>
      assert.deepEqual((await peerings.locator("th").allInnerTexts()).sort(), ["edge-1", "edge-2"]),
    );
    for (const peer of ["edge-1", "edge-2"]) {
      const text = await peerings.filter({ hasText: peer }).innerText();
      assert.match(text, new RegExp(`tenantry-${peer}\\s+Ready`), text);
      assert.match(text, /pods=500/, text);
    }
    await assertAccessible(page, "the operator's clusters page with peerings");
    await page.context().close();

    const ownerPage = await loggedIn(browser, owner, password);
    await open(ownerPage, "Clusters", "Clusters");
    await ownerPage.getByRole("alert").waitFor();
    assert.match(await ownerPage.getByRole("alert").innerText(), /may list neither/);
    await ownerPage.context().close();
  });

  it("shows where a tenant's namespace is offloaded, cluster by cluster, as it happens", async () => {
    const page = await loggedIn(browser, owner, password);
    await open(page, "Offloading", "Offloading");
    await page.getByText("No namespace you may see is offloaded.").waitFor();
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace: dev },
      spec: { podOffloadingStrategy: "Remote" },
    } as KubernetesObject);
    const row = page.locator("table.offloading tbody tr", { hasText: dev });
    // No reload: the offloading's status arrives as server-sent events.
    await eventually(
      async () => {
        const text = await row.innerText();
        assert.match(text, /Remote/);
        assert.match(text, /every peered cluster/);
        assert.match(text, /edge-1: Accepted/);
        assert.match(text, /edge-2: Accepted/);
        assert.match(text, /\bReady\b/);
      },
      { timeoutMs: 90_000 },
    );
    await assertAccessible(page, "the owner's offloading page");
    await shot(page, "offloading");
    await page.context().close();

    const operatorPage = await loggedIn(browser, operator, password);
    await open(operatorPage, "Offloading", "Offloading");
    await operatorPage.getByLabel("Filter by namespace").fill(prefix);
    await operatorPage.locator("table.offloading tbody th", { hasText: dev }).waitFor();
    await operatorPage.context().close();
  });

  it("downloads a logical cloud's kubeconfig as the DCM API hands it to the person", async () => {
    await createCloud(project, cloud, {
      level: "0",
      references: [{ metadata: { name: "e2" }, spec: { cluster: "edge-2" } }],
    });
    assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`)).status, 202);
    await statusBecomes(project, cloud, (s) =>
      assert.equal((s as { deployedStatus: string }).deployedStatus, "Instantiated"),
    );
    const page = await loggedIn(browser, operator, password);
    await open(page, "Logical clouds", "Logical clouds");
    const button = page.getByRole("button", { name: `Kubeconfig of ${cloud}` });
    await button.waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), button.click()]);
    assert.equal(download.suggestedFilename(), `${project}-${cloud}.kubeconfig`);
    const text = await readFile((await download.path())!, "utf8");
    const direct = await cloudsApi("GET", `${cloudPath(project, cloud)}/kubeconfig`);
    assert.equal(text, direct.text, "the same kubeconfig as `tenantry cloud kubeconfig`");
    assert.match(text, /edge-2/);
    await assertAccessible(page, "the operator's logical clouds page");
    await page.context().close();

    const ownerPage = await loggedIn(browser, owner, password);
    const refused = await ownerPage.request.get(
      `${dashboardUrl()}/api/clouds/${project}/${cloud}/kubeconfig`,
    );
    assert.equal(refused.status(), 403, await refused.text());
    assert.match((await refused.json()).detail, /may not/);
    await ownerPage.context().close();
  });

  it("lets the owner start a runtime and an operator back it up and delete it; the owner's backup is refused on its row", async () => {
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeService",
      metadata: { name: service },
      spec: {
        plugin: { builtin: "generic" },
        defaults: { image: LOCAL_IMAGES.echo, port: 8080, volumeSize: "64Mi" },
        pods: PROCESS_NODE_PLACEMENT,
      },
    } as KubernetesObject);
    const page = await loggedIn(browser, owner, password);
    await open(page, "Runtimes", "Runtimes");
    const form = page.getByRole("form", { name: "Start a runtime" });
    await eventually(async () => {
      await page.reload();
      await form.getByLabel("Service").selectOption(service, { timeout: 2000 });
    });
    await form.getByLabel("Instance").fill("one");
    await form.getByRole("button", { name: "Start runtime" }).click();
    const row = page.locator("table.runtimes tbody tr", { hasText: service });
    await row.waitFor();

    // Tenant owners are not given RuntimeBackups: RBAC's refusal, on the runtime's row.
    await page.getByRole("button", { name: `Back up ${service} one` }).click();
    const refusal = row.getByRole("alert");
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /forbidden|cannot create/i);
    await assertAccessible(page, "the owner's runtimes page with a refusal");
    await page.context().close();

    const operatorPage = await loggedIn(browser, operator, password);
    await open(operatorPage, "Runtimes", "Runtimes");
    await operatorPage.getByRole("button", { name: `Back up ${service} one of ${owner}` }).click();
    const backup = operatorPage.locator("table.backups tbody tr", { hasText: `${service} one` });
    await backup.waitFor();
    // The backup runs for real (an agent Job beside the runtime): its phase moves on the open page.
    await eventually(async () => assert.match(await backup.innerText(), /Completed/), {
      timeoutMs: 240_000,
      intervalMs: 1000,
    });
    await assertAccessible(operatorPage, "the operator's runtimes page with a backup");
    await shot(operatorPage, "runtimes-backups");

    // Restored into the stopped runtime, which starts again.
    const operatorRow = operatorPage.locator("table.runtimes tbody tr", { hasText: service });
    await operatorPage.getByRole("button", { name: `Stop ${service} one of ${owner}` }).click();
    await eventually(async () => assert.match(await operatorRow.innerText(), /Stopped/), {
      timeoutMs: 120_000,
    });
    const backupName = await backup.locator("th").innerText();
    await operatorPage.getByRole("button", { name: `Restore ${backupName}` }).click();
    // The restore's progress shows beside its backup; once done, the runtime starts again.
    await eventually(
      async () => {
        assert.match(await backup.locator(".restore").innerText(), /last restore: Completed/);
        assert.match(await operatorRow.innerText(), /Running|Starting|Pending/);
      },
      { timeoutMs: 240_000, intervalMs: 1000 },
    );
    assert.equal(await operatorRow.getByRole("alert").count(), 0, "no refusal on the row");

    operatorPage.once("dialog", (dialog) => void dialog.accept());
    await operatorPage.getByRole("button", { name: `Delete ${service} one of ${owner}` }).click();
    await eventually(
      async () => {
        assert.equal(await operatorRow.getByRole("alert").count(), 0, "no refusal on the row");
        assert.equal(await operatorPage.locator("table.runtimes tbody tr", { hasText: service }).count(), 0);
      },
      { timeoutMs: 120_000 },
    );
    await operatorPage.context().close();
  });

  it("shows the monitor's alerts of the person's tenants on the overview", async () => {
    await custom.createClusterCustomObject({
      group,
      version,
      plural: "monitorrules",
      body: {
        apiVersion: TENANTS_API_VERSION,
        kind: "MonitorRule",
        metadata: { name: rule },
        spec: { object: "Pod", condition: "long-pending", cutOffMinutes: 0.05, tenant: mine },
      },
    });
    // A pod no node can take stays Pending.
    await core.createNamespacedPod({
      namespace: dev,
      body: {
        metadata: { name: "stuck" },
        spec: {
          nodeSelector: { [`${prefix}/nowhere`]: "true" },
          containers: [{ name: "stuck", image: "nginx" }],
        },
      },
    });
    const page = await loggedIn(browser, owner, password);
    const alert = page.locator("ul.alerts li", { hasText: `${dev}/stuck` });
    await eventually(async () => assert.match(await alert.innerText(), new RegExp(`rule ${rule}`)), {
      timeoutMs: 90_000,
    });
    await assertAccessible(page, "the owner's overview with an alert");
    await page.context().close();
  });
});
