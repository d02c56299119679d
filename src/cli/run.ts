import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { pino } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import {
  CAPABILITY_NAMES,
  LEADING_CAPABILITIES,
  parseAddress,
  type RunningTenantry,
  startHealthServer,
  startTenantry,
  TENANTRY_NAMESPACE,
  type TenantryOptions,
} from "../app/index.js";
import { errorMessage, UserError } from "../common/index.js";
import { inClusterNamespace } from "../kube/index.js";
import { gatewayFromFlags } from "../multicluster/index.js";
import { endWhenStopped } from "./shutdown.js";

/**
 * What one process runs, named by `--components`: capabilities (docs/ARCHITECTURE.md,
 * "Capabilities and the manager") — each with what it depends on, its servers, and its leader-only
 * controllers on its own Lease — and two aliases: `all`, every capability, and `controllers`,
 * every capability's leader-only controllers without their role servers (the `webhooks`,
 * `identity`, `gateway` and `runtimes` servers need their capability named).
 */
export const COMPONENT_ALIASES = ["all", "controllers"] as const;

/** The capabilities of a `--components` list, whose controllers this process leads, and what it serves. */
export interface Components {
  capabilities: string[];
  /** Those of `capabilities` with leader-only controllers to lead here. */
  controllers: string[];
  /** Whether a capability is named (or `all`): its servers run here. */
  serves(capability: string): boolean;
}

export function parseComponents(value: string): Components {
  const names = value
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);
  const known: readonly string[] = [...CAPABILITY_NAMES, ...COMPONENT_ALIASES];
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length || names.length === 0) {
    throw new UserError(
      `--components: ${unknown.length ? `unknown ${unknown.map((n) => `"${n}"`).join(", ")}` : "empty"}; choose from ${known.join(", ")}`,
      2,
    );
  }
  const named = new Set(names.includes("all") ? CAPABILITY_NAMES : names.filter((n) => n !== "controllers"));
  const controllers = new Set([...named, ...(names.includes("controllers") ? LEADING_CAPABILITIES : [])]);
  return {
    capabilities: CAPABILITY_NAMES.filter((n) => named.has(n) || controllers.has(n)),
    controllers: LEADING_CAPABILITIES.filter((n) => controllers.has(n)),
    serves: (capability) => named.has(capability),
  };
}

function seconds(option: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0 || n > 300)
      throw new UserError(`${option}: "${value}" is not a number of seconds (0–300)`, 2);
    return n;
  };
}

function port(option: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 65535)
      throw new UserError(`${option}: "${value}" is not a port (0–65535)`, 2);
    return n;
  };
}

interface RunOptions {
  kubeconfig?: string;
  inCluster?: boolean;
  namespace?: string;
  cluster: string;
  components: string;
  webhookHost?: string;
  webhookPort?: number;
  webhookService?: string;
  webhookCertificateIssuer: string;
  webhookClientCa?: string;
  allowAnonymousAdmission?: boolean;
  identityPort?: number;
  gatewayPort?: number;
  runtimesPort?: number;
  healthAddress?: string;
  apiAudiences?: string;
  shutdownDelay?: number;
  networkGateway?: string;
  networkGatewayNode?: string;
  networkPodCidr?: string;
  logLevel: string;
}

/**
 * The CA bundle of kube-apiserver's webhook client certificate (`--webhook-client-ca`), `false`
 * with `--allow-anonymous-admission`; required when the webhooks component runs.
 */
function webhookClientCa(opts: RunOptions, webhooks: boolean): string | false | undefined {
  if (opts.webhookClientCa && opts.allowAnonymousAdmission) {
    throw new UserError("give either --webhook-client-ca or --allow-anonymous-admission, not both", 2);
  }
  if (opts.allowAnonymousAdmission) return false;
  if (!opts.webhookClientCa) {
    if (!webhooks) return undefined;
    throw new UserError(
      "--webhook-client-ca: required with the webhooks component: the CA bundle (PEM file) that signs the client certificate kube-apiserver presents to webhooks (its --admission-control-config-file; see README, Install on your own cluster). --allow-anonymous-admission instead only where kube-apiserver cannot present one",
      2,
    );
  }
  let pem: string;
  try {
    pem = readFileSync(opts.webhookClientCa, "utf8");
    new X509Certificate(pem);
  } catch (err) {
    throw new UserError(
      `--webhook-client-ca: ${opts.webhookClientCa} is not a readable PEM certificate (${(err as Error).message})`,
      2,
    );
  }
  return pem;
}

/** What `tenantry run`'s flags ask of the composition root. */
export function tenantryOptions(opts: RunOptions, logger: pino.Logger, registry: Registry): TenantryOptions {
  if (Boolean(opts.kubeconfig) === Boolean(opts.inCluster)) {
    throw new UserError("give either --kubeconfig <path> or --in-cluster (in a pod)", 2);
  }
  const components = parseComponents(opts.components);
  const issuer = opts.webhookCertificateIssuer;
  if (issuer !== "self" && issuer !== "external") {
    throw new UserError(
      `--webhook-certificate-issuer: "${issuer}" is neither self (tenantry issues and renews it) nor external (cert-manager writes the Secret)`,
      2,
    );
  }
  const clientCa = webhookClientCa(opts, components.serves("webhooks"));
  const network = networkGateway(opts);
  // In a pod every server listens on the pod's addresses; Services choose which ports are reached.
  const host = opts.webhookHost ?? (opts.inCluster ? "0.0.0.0" : "127.0.0.1");
  const listen = (p: number | undefined) => ({ host, ...(p !== undefined ? { port: p } : {}) });
  return {
    cluster: opts.cluster,
    ...(opts.inCluster ? { inCluster: true } : { kubeconfig: opts.kubeconfig! }),
    namespace: opts.namespace ?? (opts.inCluster ? inClusterNamespace() : undefined) ?? TENANTRY_NAMESPACE,
    logger,
    metricsRegistry: registry,
    webhookHost: host,
    ...(opts.webhookPort ? { webhookPort: opts.webhookPort } : {}),
    webhookCertificate: { issuer },
    ...(clientCa !== undefined ? { webhookClientCa: clientCa } : {}),
    capabilities: components.capabilities,
    // A process leading nothing (webhooks, gateway, …) holds no Lease.
    controllers: components.controllers.length ? components.controllers : false,
    webhooks: components.serves("webhooks")
      ? opts.webhookService
        ? { service: { name: opts.webhookService } }
        : {}
      : false,
    identityApi: components.serves("identity") ? listen(opts.identityPort) : false,
    gateway: components.serves("gateway") ? listen(opts.gatewayPort) : false,
    ...(components.serves("runtimes")
      ? { runtimesProxy: listen(opts.runtimesPort) }
      : { runtimesAdmin: false as const, runtimesProxy: false as const }),
    ...(opts.apiAudiences ? { apiAudiences: opts.apiAudiences.split(",").filter(Boolean) } : {}),
    ...(network ? { multicluster: { network } } : {}),
  };
}

/** The network gateway joining peers' pod networks, when `--network-gateway <image>` asks for it. */
function networkGateway(opts: RunOptions) {
  try {
    return gatewayFromFlags({
      ...(opts.networkGateway ? { image: opts.networkGateway } : {}),
      ...(opts.networkGatewayNode ? { nodeSelector: opts.networkGatewayNode } : {}),
      ...(opts.networkPodCidr ? { podCidr: opts.networkPodCidr } : {}),
    });
  } catch (err) {
    throw new UserError((err as Error).message, 2);
  }
}

/** `tenantry run`: serves health and metrics at once, starts tenantry, and on SIGINT or SIGTERM drains and stops it. */
async function runAction(opts: RunOptions): Promise<void> {
  const logger = pino({ level: opts.logLevel });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const options = tenantryOptions(opts, logger, registry);
  const address = parseAddress(
    "--health-address",
    opts.healthAddress ?? (opts.inCluster ? "0.0.0.0:8081" : "127.0.0.1:0"),
  );
  // Probes are answered from the start: /readyz says 503 until informers have synced, and again
  // once stopping.
  let running: RunningTenantry | undefined;
  let stopping = false;
  const health = await startHealthServer({
    ...address,
    registry,
    ready: () => !stopping && (running?.ready() ?? false),
  });
  logger.info({ url: health.url }, "health and metrics serving");
  const stopped = new Promise<NodeJS.Signals>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve(signal));
  });
  try {
    // A failed start, or a signal while starting, ends the process: what had started (servers,
    // informers) would otherwise keep it alive, neither running nor gone.
    const started = await Promise.race([
      startTenantry(options).then(
        (value) => ({ running: value }),
        (error: unknown) => ({ error }),
      ),
      stopped.then((signal) => ({ signal })),
    ]);
    if ("signal" in started) {
      logger.warn({ signal: started.signal }, "stopped while starting");
      await health.stop();
      process.exit(1);
    }
    if ("error" in started) {
      logger.error({ error: errorMessage(started.error) }, "tenantry could not start");
      process.stderr.write(`error: ${errorMessage(started.error)}\n`);
      await health.stop();
      process.exit(1);
    }
    running = started.running;
    logger.info(
      {
        webhookUrl: running.webhookUrl,
        accessUrl: running.accessUrl,
        gatewayUrl: running.gateway?.url,
        runtimesUrl: running.runtimesProxy?.url,
        health: health.url,
      },
      "tenantry is running",
    );
    const signal = await stopped;
    // A second signal while draining means now.
    for (const again of ["SIGINT", "SIGTERM"] as const) process.once(again, () => process.exit(1));
    stopping = true;
    running.drain();
    const delaySeconds = opts.shutdownDelay ?? (opts.inCluster ? 5 : 0);
    logger.info({ signal, delaySeconds }, "stopping: not ready any more, draining admission requests");
    await sleep(delaySeconds * 1000);
    await running.stop();
    logger.info("stopped");
    endWhenStopped();
  } finally {
    await health.stop();
  }
}

/** `tenantry run`: tenantry against one cluster, from a kubeconfig or as a pod (`--in-cluster`). */
export function registerRunCommand(program: Command): void {
  program
    .command("run")
    .description("run tenantry's controllers, admission webhooks and APIs against a cluster")
    .option(
      "--kubeconfig <path>",
      "kubeconfig of the cluster (cluster-admin for installing CRDs and webhooks)",
    )
    .option("--in-cluster", "run as a pod: the service account's token, namespace and CA")
    .option("--namespace <name>", `tenantry's namespace (default: the pod's, else ${TENANTRY_NAMESPACE})`)
    .option("--cluster <name>", "name of the cluster in logs and keys", "home")
    .option(
      "--components <list>",
      `comma-separated capabilities to run, each with those it depends on (which serve and lead nothing here): ${CAPABILITY_NAMES.join(", ")}; or all, or controllers (every capability's leader-only controllers). Each capability's controllers are led on its own Lease tenantry-<capability>`,
      "all",
    )
    .option(
      "--webhook-host <ip>",
      "address every server listens on; the API server reaches the webhooks there unless --webhook-service (default: 127.0.0.1, in a pod 0.0.0.0)",
    )
    .option("--webhook-port <port>", "webhook port (default: a free one)", port("--webhook-port"))
    .option(
      "--webhook-service <name>",
      "register the webhooks with this Service of tenantry's namespace (port 443) instead of a URL",
    )
    .option(
      "--webhook-certificate-issuer <issuer>",
      "self: tenantry issues the webhook certificate and renews it; external: someone else (cert-manager) writes it into the Secret tenantry-webhook-tls",
      "self",
    )
    .option(
      "--webhook-client-ca <file>",
      "CA bundle (PEM) that signs the client certificate kube-apiserver presents to tenantry's webhooks (its --admission-control-config-file; also the token and authorization webhooks): other callers get 401. Required with the webhooks component",
    )
    .option(
      "--allow-anonymous-admission",
      "answer admission requests without a client certificate: only where kube-apiserver cannot present one (a managed control plane), with a NetworkPolicy admitting only it to the webhook port",
    )
    .option("--identity-port <port>", "identity API port (default: a free one)", port("--identity-port"))
    .option("--gateway-port <port>", "tenant gateway port (default: a free one)", port("--gateway-port"))
    .option("--runtimes-port <port>", "runtimes proxy port (default: a free one)", port("--runtimes-port"))
    .option(
      "--health-address <host:port>",
      "serve /healthz, /readyz and /metrics here (default: 127.0.0.1:0, in a pod 0.0.0.0:8081)",
    )
    .option(
      "--api-audiences <list>",
      "kube-apiserver's --api-audiences, comma-separated (default: https://kubernetes.default.svc.cluster.local)",
    )
    .option(
      "--shutdown-delay <seconds>",
      "on SIGTERM, keep serving (not ready, connections closed after each answer) this long before stopping, while the pod leaves its Services' endpoints (default: 0, in a pod 5)",
      seconds("--shutdown-delay"),
    )
    .option(
      "--network-gateway <image>",
      "run the network gateway joining peered clusters' pod networks (WireGuard) with this image, so offloaded namespaces' pods and multi-cluster services reach each other across clusters (default: off)",
    )
    .option(
      "--network-gateway-node <key=value,...>",
      "node labels the gateway's pod must match (a node with /dev/net/tun whose pods have routable addresses)",
    )
    .option(
      "--network-pod-cidr <cidr>",
      "the cluster's pod range, when the gateway node's spec.podCIDR does not give it (e.g. 10.244.0.0/16)",
    )
    .option("--log-level <level>", "trace, debug, info, warn or error", "info")
    .action(runAction);
}
