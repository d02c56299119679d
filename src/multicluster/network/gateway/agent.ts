import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { type CoreV1Api, PatchStrategy, setHeaderOptions, type V1Secret } from "@kubernetes/client-node";
import { describeError } from "../../../kube/index.js";
import { type GatewayConfig, KEEPALIVE_SECONDS, TUNNEL_INTERFACE } from "../config.js";
import { generateGatewayKeys, isWireguardKey, publicKeyOf } from "../keys.js";
import { gatewayRules } from "../rules.js";
import { parseGetResponse, renderSetRequest, uapiRequest } from "../uapi.js";

const exec = promisify(execFile);

/** The objects a gateway reads and writes in tenantry's namespace (its Role names exactly these). */
export const GATEWAY_OBJECTS = {
  keySecret: "tenantry-gateway-key",
  config: "tenantry-gateway-config",
  status: "tenantry-gateway-status",
} as const;
export const CONFIG_KEY = "config.json";
export const PRIVATE_KEY = "privateKey";
export const STATUS_KEY = "status.json";

/** What the gateway reports (its status ConfigMap): what peers need, and each tunnel's state. */
export interface GatewayStatus {
  publicKey: string;
  listenPort: number;
  podIP: string;
  /** Peer public key → seconds since the epoch of its last handshake (0: none yet). */
  handshakes: Record<string, number>;
  /** The configuration applied last (the config ConfigMap's resourceVersion). */
  appliedVersion: string;
}

export interface AgentOptions {
  core: CoreV1Api;
  namespace: string;
  podIP: string;
  wireguardGo: string;
  socketDir?: string;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

async function run(command: string, args: string[], input?: string): Promise<string> {
  if (input === undefined) return (await exec(command, args)).stdout;
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, (err, stdout, stderr) =>
      err ? reject(new Error(`${command} ${args.join(" ")}: ${stderr || err.message}`)) : resolve(stdout),
    );
    child.stdin?.end(input);
  });
}

/**
 * The gateway's own key: made here the first time and kept in its Secret (which its Role alone
 * may read besides the cluster's administrators), so it never leaves the cluster. A concurrent
 * writer's key wins (the write carries the resourceVersion read).
 */
export async function ensurePrivateKey(core: CoreV1Api, namespace: string): Promise<string> {
  const name = GATEWAY_OBJECTS.keySecret;
  for (;;) {
    const secret: V1Secret = await core.readNamespacedSecret({ name, namespace });
    const existing = secret.data?.[PRIVATE_KEY] && Buffer.from(secret.data[PRIVATE_KEY], "base64").toString();
    if (existing && isWireguardKey(existing)) return existing;
    const { privateKey } = generateGatewayKeys();
    try {
      await core.replaceNamespacedSecret({
        name,
        namespace,
        body: {
          ...secret,
          data: { ...secret.data, [PRIVATE_KEY]: Buffer.from(privateKey).toString("base64") },
        },
      });
      return privateKey;
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
  }
}

/**
 * Runs wireguard-go on its TUN device and keeps it configured from the config ConfigMap: the
 * whole device through the UAPI socket, the routes of the peers' ranges into the tunnel, and the
 * remapping and filter rules. Reports its public key, address and handshakes in the status ConfigMap.
 */
export class GatewayAgent {
  private child?: ChildProcess;
  private appliedVersion = "";
  private lastStatus = "";
  private stopping = false;

  constructor(private readonly options: AgentOptions) {}

  get socket(): string {
    return `${this.options.socketDir ?? "/var/run/wireguard"}/${TUNNEL_INTERFACE}.sock`;
  }

  async run(): Promise<void> {
    const { core, namespace, log } = this.options;
    const privateKey = await ensurePrivateKey(core, namespace);
    this.start();
    while (!existsSync(this.socket)) {
      if (this.child?.exitCode !== null) throw new Error(`wireguard-go exited (${this.child?.exitCode})`);
      await sleep(100);
    }
    log("wireguard-go is up", { interface: TUNNEL_INTERFACE, publicKey: publicKeyOf(privateKey) });
    while (!this.stopping) {
      try {
        await this.sync(privateKey);
      } catch (err) {
        log("sync failed", { error: describeError(err) });
      }
      await sleep(1000);
    }
  }

  stop(): void {
    this.stopping = true;
    this.child?.kill("SIGTERM");
  }

  private start(): void {
    const child = spawn(this.options.wireguardGo, ["-f", TUNNEL_INTERFACE], {
      env: { ...process.env, WG_PROCESS_FOREGROUND: "1", LOG_LEVEL: "error" },
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.on("exit", (code, signal) => {
      if (this.stopping) return;
      // Without its device the gateway is nothing: the kubelet restarts the container.
      this.options.log("wireguard-go exited", { code, signal });
      process.exit(1);
    });
    this.child = child;
  }

  private async sync(privateKey: string): Promise<void> {
    const { core, namespace } = this.options;
    // No configuration before the controller knows this gateway's key: report it first.
    const map = await core
      .readNamespacedConfigMap({ name: GATEWAY_OBJECTS.config, namespace })
      .catch((err) => {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      });
    const version = map?.metadata?.resourceVersion ?? "";
    const text = map?.data?.[CONFIG_KEY];
    if (text && version !== this.appliedVersion) {
      await this.apply(privateKey, JSON.parse(text) as GatewayConfig);
      this.appliedVersion = version;
      this.options.log("configuration applied", { version });
    }
    await this.report(privateKey);
  }

  private async apply(privateKey: string, config: GatewayConfig): Promise<void> {
    const request = renderSetRequest({
      privateKey,
      listenPort: config.listenPort,
      peers: config.peers.map((peer) => ({
        publicKey: peer.publicKey,
        allowedIps: [peer.remappedCidr],
        ...(peer.endpoint ? { endpoint: peer.endpoint, persistentKeepaliveSeconds: KEEPALIVE_SECONDS } : {}),
      })),
    });
    const rules = gatewayRules(config);
    await uapiRequest(this.socket, request);
    await run("ip", ["link", "set", TUNNEL_INTERFACE, "up"]);
    const wanted = new Set(config.peers.map((p) => p.remappedCidr));
    const routes = JSON.parse(
      (await run("ip", ["-j", "route", "show", "dev", TUNNEL_INTERFACE])) || "[]",
    ) as {
      dst: string;
    }[];
    for (const route of routes)
      if (!wanted.has(route.dst)) await run("ip", ["route", "del", route.dst, "dev", TUNNEL_INTERFACE]);
    for (const cidr of wanted) await run("ip", ["route", "replace", cidr, "dev", TUNNEL_INTERFACE]);
    await run("nft", ["-f", "-"], rules);
  }

  private async report(privateKey: string): Promise<void> {
    const { core, namespace, podIP } = this.options;
    const state = parseGetResponse(await uapiRequest(this.socket, "get=1\n\n"));
    const status: GatewayStatus = {
      publicKey: publicKeyOf(privateKey),
      listenPort: state.listenPort ?? 0,
      podIP,
      handshakes: Object.fromEntries(state.peers.map((p) => [p.publicKey, p.lastHandshakeSeconds])),
      appliedVersion: this.appliedVersion,
    };
    const text = JSON.stringify(status);
    if (text === this.lastStatus) return;
    await core.patchNamespacedConfigMap(
      { name: GATEWAY_OBJECTS.status, namespace, body: { data: { [STATUS_KEY]: text } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    this.lastStatus = text;
  }
}
