/**
 * What a simulated machine does at first boot, from its user data alone, as a virtual machine with
 * cloud-init and a kubelet would: write the files of the cloud-config document (under the
 * machine's own root folder), then run the kubelet's TLS bootstrap for real — authenticate with the
 * bootstrap token, submit a kubelet client CSR, wait for kube-controller-manager to approve and
 * sign it, and register the Node with the certificate. The Node is then handed to KWOK (its
 * annotation), which keeps its heartbeats and runs its pods, as it does for the harness's nodes.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { V1CertificateSigningRequest, V1Node, V1Taint } from "@kubernetes/client-node";
import { parse } from "yaml";
import { exponentialDelay, kubeconfigYaml } from "../../kube/index.js";
import { createCertificateRequest } from "../../pki/index.js";
import { KWOK_NODE_ANNOTATION } from "../spec.js";

export interface CloudConfig {
  write_files?: { path: string; content?: string; permissions?: string }[];
  runcmd?: (string | string[])[];
}

/** The hardware the host gives the machine. */
export interface MachineHardware {
  cpu: string;
  memory: string;
  pods: string;
  ipv4: string;
}

export function parseCloudConfig(userData: string): CloudConfig {
  if (!userData.startsWith("#cloud-config")) throw new Error("user data is not a #cloud-config document");
  const document = parse(userData) as CloudConfig | null;
  return document ?? {};
}

/** Writes the document's files under `root` (the machine's `/`). */
export async function writeFiles(root: string, config: CloudConfig): Promise<void> {
  for (const file of config.write_files ?? []) {
    const target = join(root, file.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, file.content ?? "", { mode: Number.parseInt(file.permissions ?? "0644", 8) });
  }
}

/** Whether the document starts a kubelet (`systemctl enable --now kubelet`, `systemctl start kubelet`). */
export function startsKubelet(config: CloudConfig): boolean {
  return (config.runcmd ?? []).some((command) => {
    const words = Array.isArray(command) ? command : command.split(/\s+/);
    return (
      words[0] === "systemctl" &&
      words.includes("kubelet") &&
      words.some((w) => w === "start" || w === "--now")
    );
  });
}

/** The kubelet flags in `/etc/default/kubelet` (`KUBELET_EXTRA_ARGS="…"`), as name → value. */
export function kubeletFlagsOf(text: string): Map<string, string> {
  const match = /KUBELET_EXTRA_ARGS="?([^"\n]*)"?/.exec(text);
  const flags = new Map<string, string>();
  for (const word of (match?.[1] ?? "").split(/\s+/).filter(Boolean)) {
    const [name, ...rest] = word.replace(/^--/, "").split("=");
    flags.set(name!, rest.join("="));
  }
  return flags;
}

function parseLabels(text: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of (text ?? "").split(",").filter(Boolean)) {
    const [key, value = ""] = pair.split("=");
    labels[key!] = value;
  }
  return labels;
}

function parseTaints(text: string | undefined): V1Taint[] {
  return (text ?? "")
    .split(",")
    .filter(Boolean)
    .map((spec) => {
      const [keyValue = "", effect = ""] = spec.split(":");
      const [key = "", value] = keyValue.split("=");
      return { key, ...(value ? { value } : {}), effect };
    });
}

/** The parts of a kubeconfig the kubelet's bootstrap reads. */
interface Kubeconfig {
  clusters?: { cluster?: { server?: string; "certificate-authority-data"?: string } }[];
  users?: { user?: { token?: string } }[];
}

type Credentials = { token: string } | { certPem: string; keyPem: string };

interface ApiTarget {
  server: string;
  caPem: string;
  credentials: Credentials;
}

/** One call to kube-apiserver, as kubelet makes it (no client library: a machine boots lean). */
function call<T>(
  target: ApiTarget,
  method: string,
  path: string,
  body?: unknown,
  contentType = "application/json",
): Promise<T> {
  const url = new URL(path, target.server);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const auth = "token" in target.credentials ? target.credentials : undefined;
  const cert = "certPem" in target.credentials ? target.credentials : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: target.caPem,
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        headers: {
          Accept: "application/json",
          ...(auth ? { Authorization: `Bearer ${auth.token}` } : {}),
          ...(payload ? { "Content-Type": contentType } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve((text ? JSON.parse(text) : {}) as T);
          let message = text.slice(0, 300);
          try {
            message = (JSON.parse(text) as { message?: string }).message ?? message;
          } catch {
            // Not JSON: keep the text.
          }
          reject(
            Object.assign(new Error(`${method} ${url.pathname}: HTTP ${status}: ${message}`), {
              code: status,
            }),
          );
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`${method} ${url.pathname}: timed out`)));
    req.on("error", reject);
    req.end(payload);
  });
}

export interface JoinResult {
  nodeName: string;
  csrName: string;
}

/**
 * The kubelet's TLS bootstrap with the flags of the user data, under `root`. Throws with the API
 * server's own words when a step is refused (an expired token is a 401, for instance).
 */
export async function kubeletBootstrap(
  root: string,
  hardware: MachineHardware,
  log: (line: string) => void,
  options: { readyDelayMs?: number; signal?: AbortSignal } = {},
): Promise<JoinResult> {
  const { signal } = options;
  const flags = kubeletFlagsOf(await readFile(join(root, "etc/default/kubelet"), "utf8"));
  const bootstrapPath = join(
    root,
    flags.get("bootstrap-kubeconfig") ?? "/etc/kubernetes/bootstrap-kubelet.conf",
  );
  const kubeconfigPath = join(root, flags.get("kubeconfig") ?? "/etc/kubernetes/kubelet.conf");
  const nodeName = flags.get("hostname-override");
  if (!nodeName) throw new Error("the kubelet flags name no --hostname-override");
  const bootstrap = parse(await readFile(bootstrapPath, "utf8")) as Kubeconfig;
  const server = bootstrap.clusters?.[0]?.cluster?.server;
  const caData = bootstrap.clusters?.[0]?.cluster?.["certificate-authority-data"];
  const token = bootstrap.users?.[0]?.user?.token;
  if (!server || !caData || !token) throw new Error(`${bootstrapPath} lacks the server, its CA or the token`);
  const caPem = Buffer.from(caData, "base64").toString();
  const asBootstrapper: ApiTarget = { server, caPem, credentials: { token } };

  const { csrPem, keyPem } = await createCertificateRequest(`system:node:${nodeName}`, ["system:nodes"]);
  const csrName = `node-csr-${randomBytes(8).toString("hex")}`;
  const csrPath = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
  log(`submitting CSR ${csrName} for system:node:${nodeName}`);
  await call(asBootstrapper, "POST", csrPath, {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name: csrName },
    spec: {
      request: Buffer.from(csrPem).toString("base64"),
      signerName: "kubernetes.io/kube-apiserver-client-kubelet",
      usages: ["digital signature", "client auth"],
    },
  });
  let certificate: string | undefined;
  for (let attempt = 0; !certificate; attempt++) {
    if (signal?.aborted) throw new Error("stopped while waiting for the certificate");
    const csr = await call<V1CertificateSigningRequest>(asBootstrapper, "GET", `${csrPath}/${csrName}`);
    const refused = csr.status?.conditions?.find((c) => c.type === "Denied" || c.type === "Failed");
    if (refused)
      throw new Error(`CSR ${csrName} ${refused.type}: ${refused.message ?? refused.reason ?? ""}`);
    if (csr.status?.certificate) certificate = Buffer.from(csr.status.certificate, "base64").toString();
    else await sleep(exponentialDelay(attempt, 100, 500));
  }
  log(`CSR ${csrName} approved and signed`);

  // kubelet.conf: the same cluster, with the node's own client certificate.
  await mkdir(dirname(kubeconfigPath), { recursive: true });
  await writeFile(
    kubeconfigPath,
    kubeconfigYaml([
      {
        name: "default",
        cluster: { name: "cluster", server, caData },
        user: {
          name: `system:node:${nodeName}`,
          certData: Buffer.from(certificate).toString("base64"),
          keyData: Buffer.from(keyPem).toString("base64"),
        },
      },
    ]),
    { mode: 0o600 },
  );
  const asNode: ApiTarget = { server, caPem, credentials: { certPem: certificate, keyPem } };

  const capacity = { cpu: hardware.cpu, memory: hardware.memory, pods: hardware.pods };
  const node: V1Node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: nodeName,
      labels: {
        ...parseLabels(flags.get("node-labels")),
        "kubernetes.io/hostname": nodeName,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
      },
      // KWOK manages the Node from its creation on (heartbeats, the node lease, the pods scheduled
      // on it), as it does the harness's nodes: it only takes nodes annotated when it first sees them.
      annotations: { [KWOK_NODE_ANNOTATION]: "fake", "node.alpha.kubernetes.io/ttl": "0" },
    },
    spec: { taints: parseTaints(flags.get("register-with-taints")) },
    status: {
      capacity,
      allocatable: capacity,
      addresses: [
        { type: "InternalIP", address: hardware.ipv4 },
        { type: "Hostname", address: nodeName },
      ],
    },
  };
  // The kubelet starts with its certificate and registers once its container runtime is up.
  if (options.readyDelayMs) await sleep(options.readyDelayMs, undefined, signal ? { signal } : {});
  try {
    await call(asNode, "POST", "/api/v1/nodes", node);
    log(`registered Node ${nodeName}`);
  } catch (err) {
    // A Node of this name already registered (a restarted machine): the kubelet takes it over.
    if ((err as { code?: number }).code !== 409) throw err;
    log(`Node ${nodeName} was already registered`);
  }
  return { nodeName, csrName };
}
