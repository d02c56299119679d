/**
 * Runs Capsule's manager out of cluster against a local cluster, the way its chart would run it
 * in one: CRDs from its module, a CapsuleConfiguration, the webhooks of its chart registered with
 * a URL on loopback and a certificate issued here.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { KubernetesObject } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { applyObject, type ClusterClient } from "../../src/kube/index.js";
import { freePort } from "../../src/localcluster/index.js";
import { createCertificateAuthority, issueCertificate } from "../../src/pki/index.js";
import { type CapsuleBuild, CapsuleUnavailable } from "./capsule-build.js";

export const CAPSULE_NAMESPACE = "capsule-system";
/** The group Capsule treats as tenant users (CapsuleConfiguration spec.userGroups). */
export const CAPSULE_USER_GROUP = "projectcapsule.dev";
const CAPSULE_API = "capsule.clastix.io/v1beta2";

export interface RunningCapsule {
  pid: number;
  webhooks: string[];
  logFile: string;
  stop(): Promise<void>;
}

interface WebhookEntry {
  name: string;
  path: string;
  rules: unknown[];
}

/**
 * Webhook names, paths and rules from the chart's webhook templates. Helm directives are dropped;
 * what is left of each entry is plain YAML except clientConfig (an include) and values lookups,
 * which are replaced here by a URL on loopback and fixed settings.
 */
export function webhooksFromTemplate(text: string): WebhookEntry[] {
  const entries: WebhookEntry[] = [];
  for (const block of text.split(/^- admissionReviewVersions:/m).slice(1)) {
    const path = /"path"\s+"([^"]+)"/.exec(block)?.[1];
    const name = /^\s+name:\s*([\w.-]+)\s*$/m.exec(block)?.[1];
    const rulesMatch = /^(\s*)rules:\s*\n((?:\1\s+.*\n|\1- .*\n|\s*\{\{.*\n)+)/m.exec(block);
    if (!path || !name || !rulesMatch) continue;
    const rulesText = rulesMatch[2]!
      .split("\n")
      .filter((l) => !/^\s*\{\{.*\}\}\s*$/.test(l))
      .join("\n");
    try {
      const rules = parseAllDocuments(rulesText)[0]?.toJS() as unknown[];
      if (Array.isArray(rules)) entries.push({ name, path, rules });
    } catch {
      // An entry whose rules come from values only cannot be read from the template: left out.
    }
  }
  return entries;
}

/** The webhooks the workload meets: namespaces, tenants, and the objects Capsule manages in namespaces. */
function relevant(entry: WebhookEntry): boolean {
  const resources = JSON.stringify(entry.rules);
  return /namespaces|tenants|networkpolicies|resourcequotas|rolebindings|limitranges/.test(resources);
}

async function applyCrds(client: ClusterClient, build: CapsuleBuild): Promise<string[]> {
  const names: string[] = [];
  for (const file of (await readdir(build.crdDir)).filter((f) => f.endsWith(".yaml")).sort()) {
    for (const doc of parseAllDocuments(await readFile(join(build.crdDir, file), "utf8"))) {
      const crd = doc.toJS() as KubernetesObject & { spec?: { conversion?: unknown } };
      if (crd?.kind !== "CustomResourceDefinition") continue;
      // Conversion between served versions would need the webhook Service; the benchmark uses one version.
      if (crd.spec?.conversion) crd.spec.conversion = { strategy: "None" };
      await applyObject(client, crd);
      names.push(crd.metadata!.name!);
    }
  }
  for (const name of names) {
    for (let i = 0; ; i++) {
      const crd = await client.apiextensions.readCustomResourceDefinition({ name });
      if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (i > 100) throw new Error(`CRD ${name} not established`);
      await sleep(100);
    }
  }
  return names;
}

function answersTls(port: number, caPem: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path: "/", method: "GET", ca: caPem, timeout: 1000 },
      (res) => {
        res.resume();
        resolve(true);
      },
    );
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

async function supportedFlags(binary: string): Promise<Set<string>> {
  return new Promise((resolve) => {
    const child = spawn(binary, ["--help"], { stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (c: Buffer) => {
      text += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      text += c.toString();
    });
    child.on("close", () => resolve(new Set([...text.matchAll(/--([a-z0-9-]+)/g)].map((m) => m[1]!))));
    child.on("error", () => resolve(new Set()));
  });
}

export async function startCapsule(options: {
  build: CapsuleBuild;
  client: ClusterClient;
  kubeconfig: string;
  dir: string;
  workers: number;
}): Promise<RunningCapsule> {
  const { build, client } = options;
  await applyCrds(client, build);
  await client.core.createNamespace({ body: { metadata: { name: CAPSULE_NAMESPACE } } }).catch(() => {});
  await applyObject(client, {
    apiVersion: CAPSULE_API,
    kind: "CapsuleConfiguration",
    metadata: { name: "default" },
    spec: {
      userGroups: [CAPSULE_USER_GROUP],
      forceTenantPrefix: false,
      protectedNamespaceRegex: "",
      // Certificates come from here, not from Capsule's own TLS controller (it would need its Service).
      enableTLSReconciler: false,
    },
  } as KubernetesObject);

  // controller-runtime's webhook server reads its certificate from $TMPDIR/k8s-webhook-server/serving-certs.
  const tmp = join(options.dir, "capsule-tmp");
  const certDir = join(tmp, "k8s-webhook-server", "serving-certs");
  await mkdir(certDir, { recursive: true });
  const ca = await createCertificateAuthority("capsule-webhook-ca");
  const serving = await issueCertificate(ca, {
    commonName: "capsule-webhook",
    ipAddresses: ["127.0.0.1"],
    dnsNames: ["localhost"],
    usage: "server",
  });
  await writeFile(join(certDir, "tls.crt"), serving.certPem);
  await writeFile(join(certDir, "tls.key"), serving.keyPem, { mode: 0o600 });

  const flags = await supportedFlags(build.binary);
  // Releases without the flag listen on controller-runtime's default port.
  const port = flags.has("webhook-port") ? await freePort() : 9443;
  const args = [
    ...(flags.has("webhook-port") ? [`--webhook-port=${port}`] : []),
    "--enable-leader-election=false",
    ...(flags.has("metrics-addr") ? ["--metrics-addr=0"] : []),
    ...(flags.has("metrics-bind-address") ? ["--metrics-bind-address=0"] : []),
    ...(flags.has("health-probe-bind-address") ? ["--health-probe-bind-address=0"] : []),
    ...(flags.has("workers") ? [`--workers=${options.workers}`] : []),
    ...(flags.has("zap-log-level") ? ["--zap-log-level=error"] : []),
  ];
  const logFile = join(options.dir, "capsule.log");
  const log = createWriteStream(logFile);
  const child: ChildProcess = spawn(build.binary, args, {
    env: { ...process.env, KUBECONFIG: options.kubeconfig, NAMESPACE: CAPSULE_NAMESPACE, TMPDIR: tmp },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let exited: number | null | undefined;
  child.on("exit", (code) => {
    exited = code;
  });
  const lastLines = async () =>
    existsSync(logFile) ? (await readFile(logFile, "utf8")).trim().split("\n").slice(-6).join("\n") : "";
  const command = `NAMESPACE=${CAPSULE_NAMESPACE} KUBECONFIG=… ${build.binary} ${args.join(" ")}`;
  for (let i = 0; !(await answersTls(port, ca.certPem)); i++) {
    if (exited !== undefined)
      throw new CapsuleUnavailable(command, `exited with ${exited}: ${await lastLines()}`);
    if (i > 600) {
      child.kill();
      throw new CapsuleUnavailable(command, `webhook server not up after 60 s: ${await lastLines()}`);
    }
    await sleep(100);
  }

  const entries: { kind: "mutating" | "validating"; entry: WebhookEntry }[] = [];
  for (const file of build.webhookTemplates) {
    const kind = file.includes("mutating") ? "mutating" : "validating";
    for (const entry of webhooksFromTemplate(await readFile(file, "utf8")).filter(relevant))
      entries.push({ kind, entry });
  }
  if (!entries.some((e) => e.entry.rules.some((r) => JSON.stringify(r).includes('"namespaces"')))) {
    child.kill();
    throw new CapsuleUnavailable(
      `read ${build.webhookTemplates.join(", ")}`,
      "found no namespace webhook in the chart templates",
    );
  }
  const caBundle = Buffer.from(ca.certPem).toString("base64");
  for (const kind of ["mutating", "validating"] as const) {
    const webhooks = entries
      .filter((e) => e.kind === kind)
      .map(({ entry }) => ({
        name: entry.name,
        admissionReviewVersions: ["v1"],
        clientConfig: { url: `https://127.0.0.1:${port}${entry.path}`, caBundle },
        rules: entry.rules,
        failurePolicy: "Fail",
        matchPolicy: "Equivalent",
        sideEffects: "None",
        timeoutSeconds: 10,
        // The cluster's own namespaces stay out of reach, as with tenantry's webhooks.
        namespaceSelector: {
          matchExpressions: [
            {
              key: "kubernetes.io/metadata.name",
              operator: "NotIn",
              values: ["kube-system", "kube-public", "kube-node-lease", CAPSULE_NAMESPACE],
            },
          ],
        },
      }));
    if (webhooks.length === 0) continue;
    await applyObject(client, {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: kind === "mutating" ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
      metadata: { name: "capsule" },
      webhooks,
    } as KubernetesObject);
  }

  return {
    pid: child.pid!,
    webhooks: entries.map((e) => `${e.entry.name} ${e.entry.path}`),
    logFile,
    async stop() {
      if (exited !== undefined) return;
      child.kill("SIGTERM");
      for (let i = 0; i < 100 && exited === undefined; i++) await sleep(100);
      if (exited === undefined) child.kill("SIGKILL");
    },
  };
}

/** A Capsule Tenant with the same owner, namespace allowance, quota, defaults and isolation as tenantry's. */
export function capsuleTenant(name: string, owner: string, namespaces: number): KubernetesObject {
  return {
    apiVersion: CAPSULE_API,
    kind: "Tenant",
    metadata: { name },
    spec: {
      owners: [{ kind: "User", name: owner }],
      namespaceOptions: { quota: namespaces },
      resourceQuotas: {
        scope: "Tenant",
        items: [{ hard: { pods: "100000", "requests.cpu": "1000", "requests.memory": "1000Gi" } }],
      },
      limitRanges: {
        items: [
          {
            limits: [
              {
                type: "Container",
                default: { cpu: "100m", memory: "64Mi" },
                defaultRequest: { cpu: "10m", memory: "16Mi" },
              },
            ],
          },
        ],
      },
      networkPolicies: {
        items: [
          {
            policyTypes: ["Ingress"],
            podSelector: {},
            ingress: [
              { from: [{ namespaceSelector: { matchLabels: { "capsule.clastix.io/tenant": name } } }] },
            ],
          },
        ],
      },
    },
  } as KubernetesObject;
}
