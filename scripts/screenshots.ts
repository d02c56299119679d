/**
 * The README's dashboard screenshots (docs/dashboard-*.png), taken on the demo a newcomer gets from
 * `npm start`: tenant `demo` owned by alice, the demo's operator, the clusters home, edge-1 and edge-2.
 *
 *   npm run screenshots                      the running `npm start`, else a `tenantry up` of its own
 *   npm run screenshots -- --dir <folder>    the clusters folder of a running `tenantry up --dir <folder>`
 *   npm run screenshots -- --out <folder>    where the pictures go (default: docs/)
 *
 * When no tenantry answers in the clusters folder (default: the embedded default's, as `npm start`
 * uses it), it starts `tenantry up --dir` in a temporary folder and stops it at the end, as Ctrl-C
 * does. So that every page shows something, it first does what a newcomer would try, through
 * tenantry's CLI, the Kubernetes API as alice and the dashboard itself, each step skipped when
 * already done: home peered with edge-1 and edge-2 (`tenantry peer`), alice's Deployment `web` in
 * demo-dev, her namespace demo-team (the dashboard) offloaded to both edges (`tenantry offload`),
 * a grant letting bob read demo-dev's ConfigMaps (the dashboard), and a backup of alice's runtime
 * to the object store (the dashboard, as the operator). Debian's Chromium (scripts/chromium.ts),
 * driven by playwright-core, takes the pictures.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs, promisify } from "node:util";
import { AppsV1Api, KubeConfig } from "@kubernetes/client-node";
import { type Browser, chromium, type Locator, type Page } from "playwright-core";
import {
  DEMO_MEMBER,
  DEMO_OPERATOR,
  DEMO_OWNER,
  DEMO_PASSWORDS,
  DEMO_RUNTIME_INSTANCE,
  DEMO_TENANT,
} from "../src/app/demo.js";
import { ENDPOINTS_FILE, type TenantryEndpoints } from "../src/app/embedded.js";
import { defaultClustersDir } from "../src/common/index.js";
import { ensureChromium } from "./chromium.js";

const ROOT = resolve(import.meta.dirname, "..");
const BIN = join(ROOT, "bin", "tenantry.js");
const PEERS = ["edge-1", "edge-2"] as const;
/** alice's namespace that the script creates and offloads (the tenant's `namespacePrefix` is `demo-`). */
const TEAM_NAMESPACE = `${DEMO_TENANT}-team`;
const DEV_NAMESPACE = `${DEMO_TENANT}-dev`;
const GRANT = "read-config";
/** The width the README's pictures have had; a page taller than the window is taken whole. */
const VIEWPORT = { width: 1280, height: 900 };

function say(line: string): void {
  process.stderr.write(`screenshots: ${line}\n`);
}

/** Polls `check` until it answers something, or throws naming `what` after `seconds`. */
async function until<T>(what: string, seconds: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${seconds} s`);
    await sleep(1000);
  }
}

/** A tenantry CLI command (compiled, as `npx tenantry` runs it); its standard output. */
async function tenantry(...args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [BIN, ...args], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const { stderr } = err as { stderr?: string };
    throw new Error(`tenantry ${args.join(" ")}: ${stderr?.trim() || (err as Error).message}`);
  }
}

/** A `tenantry up` the script uses: one found running, or one it started (and stops). */
interface Demo {
  clustersDir: string;
  dashboardUrl: string;
  /** The `tenantry up` this script started. */
  started?: ChildProcess;
  /** Resolves once it is up (at once for one found running). */
  ready: Promise<void>;
}

/** The tenantry whose endpoints are in `clustersDir`, when its dashboard answers. */
async function findRunning(clustersDir: string): Promise<Demo | undefined> {
  const endpoints = await readFile(join(clustersDir, "home", ENDPOINTS_FILE), "utf8")
    .then((text) => JSON.parse(text) as TenantryEndpoints)
    .catch(() => undefined);
  if (!endpoints?.dashboardUrl) return undefined;
  const answers = await fetch(endpoints.dashboardUrl, { signal: AbortSignal.timeout(5000) })
    .then((res) => res.ok)
    .catch(() => false);
  return answers
    ? { clustersDir, dashboardUrl: endpoints.dashboardUrl, ready: Promise.resolve() }
    : undefined;
}

/**
 * Starts `tenantry up --dir <temporary folder>` in this process group (a Ctrl-C at the terminal
 * reaches it as it reaches `npm start`); its `ready` resolves once it has printed that it is up and
 * its dashboard answers.
 */
async function startDemo(): Promise<Demo> {
  const clustersDir = await mkdtemp(join(tmpdir(), "tenantry-screenshots-"));
  say(`no tenantry answers; starting tenantry up --dir ${clustersDir} (a few minutes)`);
  const child = spawn(process.execPath, [BIN, "up", "--dir", clustersDir], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
  let output = "";
  const up = new Promise<void>((resolveUp, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk;
      if (output.includes("Press Ctrl-C to stop")) resolveUp();
    });
    child.once("exit", (code, signal) =>
      reject(new Error(`tenantry up ended (${signal ?? code}) before it was up:\n${output.slice(-2000)}`)),
    );
  });
  const demo: Demo = { clustersDir, dashboardUrl: "", started: child, ready: up };
  demo.ready = up.then(async () => {
    const found = await findRunning(clustersDir);
    if (!found) throw new Error(`tenantry up is up but its dashboard does not answer (${clustersDir})`);
    demo.dashboardUrl = found.dashboardUrl;
  });
  return demo;
}

/** Stops a `tenantry up` the script started, as Ctrl-C does, and removes its folder once it has ended. */
async function stopDemo(demo: Demo): Promise<void> {
  const child = demo.started;
  if (!child) return;
  demo.started = undefined;
  if (child.exitCode === null && child.signalCode === null) {
    say("stopping the tenantry up it started");
    const exited = once(child, "exit");
    child.kill("SIGINT");
    // tenantry up bounds its own stop (20 s, then it kills what is left); this only guards a hang,
    // unreferenced so that it does not keep the script alive once tenantry up has ended.
    const hang = sleep(90_000, false, { ref: false });
    const ended = await Promise.race([exited.then(() => true), hang]);
    if (!ended) {
      child.kill("SIGKILL");
      say(
        `tenantry up (pid ${child.pid}) did not end within 90 s; its clusters may be left in ${demo.clustersDir}`,
      );
      return;
    }
  }
  // A volume still mounted there (the pooled storage's loop devices) would be emptied, not unmounted.
  const mounts = await readFile("/proc/mounts", "utf8").catch(() => "");
  if (mounts.split("\n").some((line) => line.split(" ")[1]?.startsWith(`${demo.clustersDir}/`))) {
    say(`left ${demo.clustersDir}: something is still mounted under it`);
    return;
  }
  await rm(demo.clustersDir, { recursive: true, force: true }).catch((err: Error) =>
    say(`could not remove ${demo.clustersDir}: ${err.message}`),
  );
}

/** home peered with edge-1 and edge-2: `tenantry peer` for each peering `tenantry status` lacks. */
async function ensurePeerings(clustersDir: string): Promise<void> {
  const status = JSON.parse(
    await tenantry("status", "--cluster", "home", "--clusters-dir", clustersDir, "-o", "json"),
  ) as { peerings: { name: string }[] };
  for (const provider of PEERS) {
    if (status.peerings.some((p) => p.name === provider)) continue;
    say(`peering home with ${provider} (tenantry peer)`);
    await tenantry(
      "peer",
      ...["--consumer", "home", "--provider", provider, "--clusters-dir", clustersDir, "--timeout", "180s"],
    );
  }
}

/** alice's Deployment `web` in demo-dev, made with her own kubeconfig, so that her pods request something. */
async function ensureWorkload(clustersDir: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(join(clustersDir, "home", `${DEMO_OWNER}.kubeconfig`));
  const apps = kc.makeApiClient(AppsV1Api);
  const exists = await apps.readNamespacedDeployment({ name: "web", namespace: DEV_NAMESPACE }).then(
    () => true,
    () => false,
  );
  if (exists) return;
  say(`creating ${DEMO_OWNER}'s Deployment web in ${DEV_NAMESPACE}`);
  const labels = { app: "web" };
  await apps.createNamespacedDeployment({
    namespace: DEV_NAMESPACE,
    body: {
      metadata: { name: "web", labels },
      spec: {
        replicas: 3,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            // What the tenant's restricted pod security asks for.
            securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "web",
                image: "nginx",
                securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
              },
            ],
          },
        },
      },
    },
  });
}

/** demo-team offloaded to every peered cluster: `tenantry offload` (an operator's act), waiting for Ready. */
async function ensureOffloading(clustersDir: string): Promise<void> {
  const status = JSON.parse(
    await tenantry("status", "--cluster", "home", "--clusters-dir", clustersDir, "-o", "json"),
  ) as { offloadings: { namespace: string; phase: string }[] };
  if (status.offloadings.some((o) => o.namespace === TEAM_NAMESPACE && o.phase === "Ready")) return;
  say(`offloading ${TEAM_NAMESPACE} to ${PEERS.join(" and ")} (tenantry offload)`);
  await tenantry(
    "offload",
    ...[TEAM_NAMESPACE, "--cluster", "home", "--clusters-dir", clustersDir, "--timeout", "180s"],
  );
}

async function launchChromium(): Promise<Browser> {
  // The browser tests' launch: Debian's Chromium, no sandbox (root has none).
  return chromium.launch({ executablePath: await ensureChromium(), args: ["--no-sandbox"] });
}

/** A browser context of its own, logged in to the dashboard as a demo user through its login page. */
async function logIn(browser: Browser, demo: Demo, username: string): Promise<Page> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  await page.goto(demo.dashboardUrl);
  await page.getByLabel("User name").fill(username);
  await page.getByLabel("Password").fill(DEMO_PASSWORDS[username]!);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
  return page;
}

async function open(page: Page, label: string, heading = label): Promise<void> {
  await page
    .getByRole("navigation", { name: "Pages" })
    .getByRole("link", { name: label, exact: true })
    .click();
  await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
}

async function openTenant(page: Page): Promise<void> {
  await open(page, "Overview");
  await page.getByRole("link", { name: DEMO_TENANT, exact: true }).click();
  await page.getByRole("heading", { name: `Tenant ${DEMO_TENANT}`, level: 1 }).waitFor();
}

/** Submits a dashboard form and waits for its answer: "Done.", or the refusal it shows. */
async function submit(form: Locator, button: string): Promise<void> {
  await form.getByRole("button", { name: button }).click();
  const answer = form.locator("[role=status], .error").first();
  await answer.waitFor({ timeout: 120_000 });
  if (!(await answer.innerText()).startsWith("Done"))
    throw new Error(`${button}: ${await answer.innerText()}`);
}

/** What the script reads of the dashboard's answer for a tenant's page (GET /api/tenants/<name>). */
interface TenantAnswer {
  namespaces: { items: { name: string }[] };
  grants: { name: string; namespace: string }[];
}

/** What the script reads of the dashboard's answer for the runtimes page (GET /api/runtimes). */
interface RuntimesAnswer {
  items: { user: string; service: string; instance: string; namespace: string; name: string }[];
  /** By the runtime's `namespace/name`, newest first. */
  backups: Record<string, { name: string; phase: string; message: string }[]>;
}

/** A page's data as the dashboard's client reads it, with the page's session. */
async function dashboardData<T>(page: Page, demo: Demo, path: string): Promise<T> {
  const res = await page.request.get(`${demo.dashboardUrl}/api${path}`);
  if (!res.ok()) throw new Error(`GET /api${path}: ${res.status()} ${await res.text()}`);
  return (await res.json()) as T;
}

/** As alice in the dashboard: her namespace demo-team, and a grant letting bob read demo-dev's ConfigMaps. */
async function ensureAliceChanges(browser: Browser, demo: Demo): Promise<void> {
  const page = await logIn(browser, demo, DEMO_OWNER);
  await openTenant(page);
  const tenant = () =>
    dashboardData<TenantAnswer>(page, demo, `/tenants/${DEMO_TENANT}?filter=${TEAM_NAMESPACE}`);
  if (!(await tenant()).namespaces.items.some((n) => n.name === TEAM_NAMESPACE)) {
    say(`creating ${DEMO_OWNER}'s namespace ${TEAM_NAMESPACE} (the dashboard)`);
    const form = page.getByRole("form", { name: "Create a namespace" });
    await form.getByLabel("Namespace name").fill(TEAM_NAMESPACE);
    await submit(form, "Create namespace");
  }
  if (!(await tenant()).grants.some((g) => g.name === GRANT && g.namespace === DEV_NAMESPACE)) {
    say(`granting ${DEMO_MEMBER} get,list on configmaps in ${DEV_NAMESPACE} (the dashboard)`);
    const form = page.getByRole("form", { name: "Grant access" });
    await form.getByLabel("In namespace").selectOption(DEV_NAMESPACE);
    await form.getByLabel("Grant name").fill(GRANT);
    await form.getByLabel("Grantee name").fill(DEMO_MEMBER);
    await form.getByLabel("API groups").fill("core");
    await form.getByLabel("Resources").fill("configmaps");
    await form.getByLabel("Verbs").fill("get,list");
    await submit(form, "Grant access");
  }
  await page.context().close();
}

/**
 * As the operator in the dashboard: a completed backup of alice's runtime, made with its row's
 * "Back up" when there is none (nor one under way). A backup that fails (no object store) is
 * reported and the page taken as it is.
 */
async function ensureBackup(page: Page, demo: Demo): Promise<void> {
  await open(page, "Runtimes");
  const answer = () => dashboardData<RuntimesAnswer>(page, demo, "/runtimes");
  const runtime = await until(`${DEMO_OWNER}'s runtime`, 120, async () =>
    (await answer()).items.find((r) => r.user === DEMO_OWNER && r.instance === DEMO_RUNTIME_INSTANCE),
  );
  const label = `${runtime.service} ${DEMO_RUNTIME_INSTANCE} of ${DEMO_OWNER}`;
  const backups = async () => (await answer()).backups[`${runtime.namespace}/${runtime.name}`] ?? [];
  const phases = (await backups()).map((b) => b.phase);
  if (phases.includes("Completed")) return;
  if (!phases.some((p) => p === "Pending" || p === "Running")) {
    say(
      `backing up ${DEMO_OWNER}'s runtime ${runtime.service}/${DEMO_RUNTIME_INSTANCE} (the dashboard, as ${DEMO_OPERATOR})`,
    );
    await page.getByRole("button", { name: `Back up ${label}` }).click();
  }
  const newest = await until(`the backup of ${label} to end`, 600, async () => {
    const [latest] = await backups();
    return latest && (latest.phase === "Completed" || latest.phase === "Failed") ? latest : undefined;
  });
  if (newest.phase === "Failed") say(`the backup of ${label} failed: ${newest.message}`);
}

/** Where an element is on the page (not in the window), in CSS pixels. */
function extentOf(element: Locator): Promise<{ top: number; bottom: number }> {
  return element.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const { scrollY } = globalThis as unknown as { scrollY: number };
    return { top: box.top + scrollY, bottom: box.bottom + scrollY };
  });
}

/**
 * Saves the page as <out>/dashboard-<name>.png: the whole page, or the part from the top of
 * `part.from` (else the page's top) to the bottom of `part.to`.
 */
async function shot(page: Page, out: string, name: string, part?: { from?: Locator; to: Locator }) {
  await page.waitForLoadState("networkidle");
  const path = join(out, `dashboard-${name}.png`);
  if (!part) {
    await page.screenshot({ path, fullPage: true });
  } else {
    const margin = 16;
    const top = part.from ? Math.max(0, (await extentOf(part.from)).top - margin) : 0;
    const bottom = (await extentOf(part.to)).bottom + margin;
    const clip = { x: 0, y: top, width: VIEWPORT.width, height: Math.ceil(bottom - top) };
    await page.screenshot({ path, fullPage: true, clip });
  }
  say(`saved ${path}`);
}

/** The operator's pages: the overview, the clusters with their peerings, the runtimes with a backup. */
async function operatorShots(browser: Browser, demo: Demo, out: string): Promise<void> {
  const page = await logIn(browser, demo, DEMO_OPERATOR);
  await ensureBackup(page, demo);
  await open(page, "Overview");
  await page.locator("table.tenants tbody th", { hasText: DEMO_TENANT }).waitFor();
  await shot(page, out, "overview");
  await open(page, "Clusters");
  const peerings = page.locator("table.peerings tbody tr");
  await until("both peerings and their virtual nodes Ready", 300, async () => {
    const rows = await peerings.allInnerTexts();
    return rows.length === PEERS.length && rows.every((r) => /tenantry-edge-\d\s+Ready/.test(r))
      ? true
      : undefined;
  });
  await shot(page, out, "clusters");
  await open(page, "Runtimes");
  await page.locator("table.runtimes tbody tr").first().waitFor();
  await shot(page, out, "runtimes-backups");
  await page.context().close();
}

/** alice's pages: her tenant (quota, usage, namespaces, owners), its access grants, its offloaded namespace. */
async function aliceShots(browser: Browser, demo: Demo, out: string): Promise<void> {
  const page = await logIn(browser, demo, DEMO_OWNER);
  await openTenant(page);
  await page.locator("table.usage tbody th", { hasText: DEMO_OWNER }).waitFor({ timeout: 180_000 });
  await page.getByRole("img", { name: "namespaces: used against hard over time" }).waitFor();
  await shot(page, out, "tenant", { to: page.locator("section[aria-labelledby=owners-title]") });
  await page.locator("table.grants tbody tr", { hasText: GRANT }).waitFor();
  const grants = page.locator("section[aria-labelledby=grants-title]");
  await shot(page, out, "tenant-access", { from: grants, to: grants });
  await open(page, "Offloading");
  const row = page.locator("table.offloading tbody tr", { hasText: TEAM_NAMESPACE });
  await until(`${TEAM_NAMESPACE} offloaded to ${PEERS.join(", ")}`, 300, async () => {
    const text = await row.innerText({ timeout: 1000 }).catch(() => "");
    return PEERS.every((p) => text.includes(`${p}: Accepted`)) && /\bReady\b/.test(text) ? true : undefined;
  });
  await shot(page, out, "offloading");
  await page.context().close();
}

/** Builds dist/ when stale: the CLI and `tenantry up` run compiled JavaScript. */
async function buildIfStale(): Promise<void> {
  const build = spawn(process.execPath, [join(ROOT, "scripts", "build.mjs"), "--if-stale"], {
    stdio: "inherit",
  });
  const [code] = (await once(build, "exit")) as [number | null];
  if (code !== 0) throw new Error(`scripts/build.mjs --if-stale failed (${code})`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { dir: { type: "string" }, out: { type: "string", default: join(ROOT, "docs") } },
  });
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  await buildIfStale();
  const demo = (await findRunning(resolve(values.dir ?? defaultClustersDir()))) ?? (await startDemo());
  let browser: Browser | undefined;
  // A Ctrl-C at the terminal reaches a started tenantry up too (same process group); a signal sent
  // to this process alone is passed on by stopDemo.
  const onSignal = (signal: NodeJS.Signals) => {
    say(`${signal}: stopping`);
    void browser?.close();
    void stopDemo(demo).finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
  try {
    await demo.ready;
    say(`using the demo of ${demo.clustersDir} (dashboard ${demo.dashboardUrl})`);
    await ensurePeerings(demo.clustersDir);
    await ensureWorkload(demo.clustersDir);
    browser = await launchChromium();
    await ensureAliceChanges(browser, demo);
    await ensureOffloading(demo.clustersDir);
    await operatorShots(browser, demo, out);
    await aliceShots(browser, demo, out);
  } finally {
    await browser?.close();
    await stopDemo(demo);
  }
}

await main();
