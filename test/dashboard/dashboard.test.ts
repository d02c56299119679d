/**
 * The web dashboard in a real browser (Debian's Chromium through playwright-core): an operator and
 * a tenant owner log in with tenantry's identity service and each sees the tenants they may see; the
 * owner creates a namespace and the quota moves on the open page (server-sent events); refusals
 * appear as the API states them, next to their field; axe-core finds no serious violation on any
 * page. TENANTRY_DASHBOARD_SCREENSHOTS=<folder> saves the main pages there (docs/ for the README).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CustomObjectsApi, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import type { Browser } from "playwright-core";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { createTestUser, stopSharedBuiltinIdentity } from "../support/identity.js";
import { assertAccessible, dashboardUrl, launchBrowser, loggedIn, open, shot } from "./support.js";

const kc = testKubeConfig("home");
const custom = kc.makeApiClient(CustomObjectsApi);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const tenants = { group: "tenantry.dev", version: "v1alpha1", plural: "tenants" };

const prefix = uniqueName("dash");
const mine = `${prefix}-mine`;
const theirs = `${prefix}-theirs`;
const owner = `${prefix}-owner`;
const operator = `${prefix}-op`;
const operatorsGroup = `${prefix}:operators`;
const password = "dashboard-test-password";

async function createTenant(name: string, ownerName: string, namespaceQuota: number) {
  await custom.createClusterCustomObject({
    ...tenants,
    body: {
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name },
      spec: { owners: [{ kind: "User", name: ownerName }], namespaceQuota, quota: { hard: { pods: "10" } } },
    },
  });
}

describe("the web dashboard in Chromium", () => {
  let browser: Browser;

  before(async () => {
    await createTenant(mine, owner, 1);
    await createTenant(theirs, `${prefix}-someone-else`, 2);
    await createTestUser({ name: owner, password, tenant: mine, tenantAdmin: true });
    await createTestUser({ name: operator, password, groups: [operatorsGroup] });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `${prefix}-operators` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: operatorsGroup }],
      },
    });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await rbac.deleteClusterRoleBinding({ name: `${prefix}-operators` }).catch(() => undefined);
    for (const name of [mine, theirs])
      await custom.deleteClusterCustomObject({ ...tenants, name }).catch(() => undefined);
    await stopSharedBuiltinIdentity();
  });

  it("refuses a wrong password with the identity service's message, and the API without a session", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(dashboardUrl());
    await assertAccessible(page, "the login page");
    await shot(page, "login");
    await page.getByLabel("User name").fill(owner);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("alert").waitFor();
    assert.match(await page.getByRole("alert").innerText(), /password|credentials|invalid/i);
    const res = await fetch(`${dashboardUrl()}/api/overview`);
    assert.equal(res.status, 401);
    await context.close();
  });

  it("shows a tenant owner their tenant only, and an operator every tenant and the clusters", async () => {
    const ownerPage = await loggedIn(browser, owner, password);
    await ownerPage.getByLabel("Filter by name").fill(prefix);
    await eventually(async () => {
      const names = await ownerPage.locator("table.tenants tbody th").allInnerTexts();
      assert.deepEqual(names, [mine]);
    });
    assert.equal(await ownerPage.getByRole("heading", { name: "Clusters", level: 2 }).count(), 0);
    const direct = await ownerPage.request.get(`${dashboardUrl()}/api/tenants/${theirs}`);
    assert.equal(direct.status(), 404, "another tenant's page is not found, as through the gateway");
    await ownerPage.context().close();

    const operatorPage = await loggedIn(browser, operator, password);
    await operatorPage.getByLabel("Filter by name").fill(prefix);
    await eventually(async () => {
      const names = await operatorPage.locator("table.tenants tbody th").allInnerTexts();
      assert.deepEqual(names, [mine, theirs]);
    });
    await operatorPage.getByLabel("Filter by name").fill("");
    const clusters = await operatorPage
      .getByRole("heading", { name: "Clusters", level: 2 })
      .locator("xpath=..")
      .locator("tbody th")
      .allInnerTexts();
    assert.deepEqual(clusters.sort(), ["edge-1", "edge-2", "home"]);
    await assertAccessible(operatorPage, "the operator's overview");
    await shot(operatorPage, "overview");
    for (const [label, heading, name] of [
      ["Clusters", "Clusters", "clusters"],
      ["Offloading", "Offloading", "offloading-operator"],
      ["Runtimes", "Runtimes", "runtimes"],
      ["Nodes", "Worker nodes", "nodes"],
      ["Logical clouds", "Logical clouds", "clouds"],
    ] as const) {
      await open(operatorPage, label, heading);
      await operatorPage.waitForLoadState("networkidle");
      await assertAccessible(operatorPage, `the operator's ${label} page`);
      await shot(operatorPage, name);
    }
    await operatorPage.context().close();
  });

  it("lets the owner create a namespace, moves the quota live, and shows refusals as the API states them", async () => {
    const page = await loggedIn(browser, owner, password);
    await page.getByRole("link", { name: mine }).click();
    await page.getByRole("heading", { name: `Tenant ${mine}`, level: 1 }).waitFor();
    const namespacesQuota = page.locator(".quotas .quota", { hasText: "namespaces" });
    await eventually(async () => assert.match(await namespacesQuota.innerText(), /0 \/ 1/));

    // Refused by the API server's own validation: shown next to the name field.
    await page.getByLabel("Namespace name").fill("Not_A_Name");
    await page.getByRole("button", { name: "Create namespace" }).click();
    const fieldError = page.locator("#create-namespace-name-error");
    await fieldError.waitFor();
    assert.match(await fieldError.innerText(), /Not_A_Name/);
    assert.equal(await page.getByLabel("Namespace name").getAttribute("aria-invalid"), "true");

    const namespace = `${mine}-team`;
    await page.getByLabel("Namespace name").fill(namespace);
    await page.getByRole("button", { name: "Create namespace" }).click();
    // No reload: the tenant's update arrives as a server-sent event and the page fetches it again.
    await eventually(async () => assert.match(await namespacesQuota.innerText(), /1 \/ 1/), {
      timeoutMs: 60_000,
    });
    await page.getByRole("rowheader", { name: namespace }).waitFor();
    await page.getByRole("img", { name: "namespaces: used against hard over time" }).waitFor();

    // Over the tenant's namespace quota: tenantry's admission refuses, in its words.
    await page.getByLabel("Namespace name").fill(`${mine}-more`);
    await page.getByRole("button", { name: "Create namespace" }).click();
    const refusal = page.locator("#create-namespace-title ~ p.error, #create-namespace-name-error").first();
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /namespaceQuota|namespace quota|at most 1/i);

    // Owners may not change their own Tenant: the API's refusal, as stated.
    await page.getByLabel("Name", { exact: true }).fill("mallory");
    await page.getByRole("button", { name: "Add owner" }).click();
    const forbidden = page.locator("#add-owner-title ~ p.error, #add-owner-name-error").first();
    await forbidden.waitFor();
    assert.match(await forbidden.innerText(), /forbidden|cannot|not allowed/i);
    assert.ok(!(await page.locator("ul li", { hasText: "mallory" }).count()), "no owner was added");

    await assertAccessible(page, "the owner's tenant page");
    await shot(page, "tenant");
    for (const [label, heading] of [
      ["Overview", "Overview"],
      ["Clusters", "Clusters"],
      ["Offloading", "Offloading"],
      ["Runtimes", "Runtimes"],
      ["Nodes", "Worker nodes"],
      ["Logical clouds", "Logical clouds"],
    ] as const) {
      await open(page, label, heading);
      await page.waitForLoadState("networkidle");
      await assertAccessible(page, `the owner's ${label} page`);
    }
    await page.context().close();
  });

  it("lets an operator add an owner, shown on the open page", async () => {
    const page = await loggedIn(browser, operator, password);
    await page.getByLabel("Filter by name").fill(theirs);
    await page.getByRole("link", { name: theirs }).click();
    await page.getByRole("heading", { name: `Tenant ${theirs}`, level: 1 }).waitFor();
    await page.getByLabel("Kind").selectOption("Group");
    await page.getByLabel("Name", { exact: true }).fill(`${prefix}-team`);
    await page.getByRole("button", { name: "Add owner" }).click();
    await page
      .getByRole("listitem")
      .filter({ hasText: `Group ${prefix}-team (owner)` })
      .waitFor();
    const tenant = (await custom.getClusterCustomObject({ ...tenants, name: theirs })) as {
      spec: { owners: { kind: string; name: string }[] };
    };
    assert.deepEqual(tenant.spec.owners.at(-1), { kind: "Group", name: `${prefix}-team` });
    await page.context().close();
  });

  it("shows a worker node request's refusal next to the field it names", async () => {
    const page = await loggedIn(browser, owner, password);
    await open(page, "Nodes", "Worker nodes");
    await page.getByLabel("Node name").fill("Not_A_Node");
    await page.getByRole("button", { name: "Ask for node" }).click();
    const error = page.locator("#request-node-name-error");
    await error.waitFor();
    assert.match(await error.innerText(), /metadata\.name/);
    assert.equal(await page.getByLabel("Node name").getAttribute("aria-invalid"), "true");
    await assertAccessible(page, "the nodes page with a refusal");
    await page.context().close();
  });

  it("refuses a change without the session's CSRF token", async () => {
    const page = await loggedIn(browser, owner, password);
    const res = await page.request.post(`${dashboardUrl()}/api/tenants/${mine}/namespaces`, {
      data: { name: `${mine}-csrf` },
    });
    assert.equal(res.status(), 403);
    assert.match((await res.json()).detail, /x-csrf-token/);
    await page.context().close();
  });
});
