/**
 * A tenantry runtime plugin for a real Jupyter Server (see README.md): each runtime is a Jupyter
 * image serving under the runtime's base path, with its token in a Secret and the user's home on a
 * claim. One file, two ways to run it:
 *
 *   node --import tsx plugin.ts [--image IMAGE] <callout>     # as an executable: JSON in, JSON out
 *   node --import tsx plugin.ts [--image IMAGE] serve [--host H] [--port N]   # over HTTP
 *
 * It needs nothing of tenantry's code: the callouts are plain JSON (Vasilenko & Kurapati, Table 3).
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { stringify } from "yaml";

export const DEFAULT_IMAGE = "quay.io/jupyter/base-notebook:2025-03-14";
const PORT = 8888;
const HOME = "/home/jovyan";
/** The parameters a start may give, their defaults and their limits. */
const DEFAULTS = { cpu: "500m", memory: "1Gi", volumeSize: "1Gi" };
const LIMITS = { cpu: "8", memory: "32Gi", volumeSize: "100Gi" };
const PARAMETERS = ["image", "cpu", "memory", "volumeSize", "storageClassName"];
/** What cannot change once the home volume exists, and what a running server cannot change. */
const VOLUME_FIELDS = ["volumeSize", "storageClassName"];

interface Registration {
  user: string;
  tenant: string;
  service: string;
  instance: string;
  namespace: string;
  name: string;
  cluster: string;
  basePath: string;
}

type Config = Partial<Record<(typeof PARAMETERS)[number], string>>;

/** A callout refused: answered `{"status": "Failure", "message": …}`. */
class Refusal extends Error {}

const SUFFIXES: Record<string, number> = {
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

function amount(field: string, value: unknown): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(value));
  if (!match)
    throw new Refusal(`${field}: ${JSON.stringify(value)} is not a quantity such as 500m, 2 or 4Gi`);
  return Number(match[1]) * SUFFIXES[match[2] ?? ""]!;
}

/** The parameters checked: every problem names the field and the limit. */
export function checkConfig(config: Record<string, unknown>): Config {
  for (const field of Object.keys(config)) {
    if (!PARAMETERS.includes(field)) {
      throw new Refusal(
        `${field}: not a parameter of the Jupyter plugin (it takes ${PARAMETERS.join(", ")})`,
      );
    }
    if (typeof config[field] !== "string") throw new Refusal(`${field}: must be a string`);
  }
  for (const [field, limit] of Object.entries(LIMITS)) {
    const value = config[field];
    if (value === undefined) continue;
    const given = amount(field, value);
    if (given <= 0) throw new Refusal(`${field}: must be more than 0`);
    if (given > amount(field, limit)) throw new Refusal(`${field}: ${value} is more than the limit ${limit}`);
  }
  const image = config.image as string | undefined;
  if (image !== undefined && !/^[a-z0-9][a-z0-9._\-/:@]{0,510}$/.test(image)) {
    throw new Refusal(`image: ${JSON.stringify(image)} is not an image reference (at most 511 characters)`);
  }
  const storageClass = config.storageClassName as string | undefined;
  if (storageClass !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(storageClass)) {
    throw new Refusal(`storageClassName: ${JSON.stringify(storageClass)} is not a StorageClass name`);
  }
  return config as Config;
}

export function jupyterPlugin(options: { image?: string } = {}) {
  const defaultImage = options.image ?? DEFAULT_IMAGE;
  return {
    init: () => ({ capabilities: ["deploy-service", "check-service", "image-pull", "image-cleanup"] }),

    "deploy-service": (request: { registration: Registration; config: Record<string, unknown> }) => {
      const config = checkConfig(request.config ?? {});
      const { name, namespace, basePath, service } = request.registration;
      const labels = { "app.kubernetes.io/name": "jupyter", "app.kubernetes.io/instance": name };
      const resources = { cpu: config.cpu ?? DEFAULTS.cpu, memory: config.memory ?? DEFAULTS.memory };
      const objects = [
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `${name}-token`, namespace, labels },
          // A new token at every start: the old session's token stops working with it.
          data: { token: Buffer.from(randomBytes(24).toString("hex")).toString("base64") },
        },
        {
          apiVersion: "v1",
          kind: "PersistentVolumeClaim",
          metadata: { name: `${name}-home`, namespace, labels },
          spec: {
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: config.volumeSize ?? DEFAULTS.volumeSize } },
            ...(config.storageClassName ? { storageClassName: config.storageClassName } : {}),
          },
        },
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name, namespace, labels: { ...labels, "app.kubernetes.io/part-of": service } },
          spec: {
            replicas: 1,
            strategy: { type: "Recreate" },
            selector: { matchLabels: labels },
            template: {
              metadata: { labels },
              spec: {
                securityContext: { fsGroup: 100 },
                containers: [
                  {
                    name: "notebook",
                    image: config.image ?? defaultImage,
                    command: ["start-notebook.py"],
                    args: [
                      `--ServerApp.base_url=${basePath}`,
                      "--ServerApp.ip=0.0.0.0",
                      `--port=${PORT}`,
                      "--ServerApp.trust_xheaders=True",
                    ],
                    // Jupyter Server takes its token from this variable.
                    env: [
                      {
                        name: "JUPYTER_TOKEN",
                        valueFrom: { secretKeyRef: { name: `${name}-token`, key: "token" } },
                      },
                    ],
                    ports: [{ name: "http", containerPort: PORT }],
                    readinessProbe: {
                      httpGet: { path: `${basePath}api`, port: PORT },
                      periodSeconds: 2,
                      failureThreshold: 3,
                    },
                    resources: { requests: resources, limits: resources },
                    volumeMounts: [{ name: "home", mountPath: HOME }],
                  },
                ],
                volumes: [{ name: "home", persistentVolumeClaim: { claimName: `${name}-home` } }],
              },
            },
          },
        },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name, namespace, labels },
          spec: { selector: labels, ports: [{ name: "http", port: PORT, targetPort: "http" }] },
        },
      ];
      return {
        yaml: objects.map((o) => stringify(o)).join("---\n"),
        // Jupyter serves under its base_url: the proxy forwards the whole path.
        endpoint: { port: PORT, path: basePath.replace(/\/+$/, "") },
      };
    },

    "check-service": (request: {
      current: Record<string, unknown>;
      proposed: Record<string, unknown>;
      state: "Running" | "Stopped";
    }) => {
      checkConfig(request.proposed ?? {});
      const fields = request.state === "Running" ? PARAMETERS : VOLUME_FIELDS;
      for (const field of fields) {
        if ((request.current?.[field] ?? null) === (request.proposed?.[field] ?? null)) continue;
        return {
          compatible: false,
          field,
          message:
            request.state === "Running"
              ? `${field} cannot change while the server runs; stop it first`
              : `${field} cannot change: the home volume exists; delete the runtime to change it`,
        };
      }
      return { compatible: true };
    },

    "image-pull": (spec: { defaults?: Record<string, unknown> }) => {
      const image = spec.defaults?.image;
      return { images: [typeof image === "string" ? image : defaultImage] };
    },

    // Nothing to keep: an image the service no longer asks for goes at once.
    "image-cleanup": (spec: { images: string[] }) => ({ images: spec.images ?? [] }),
  } as Record<string, (request: never) => unknown>;
}

/** One callout: its reply, or a Failure naming what was wrong. */
export function answer(plugin: ReturnType<typeof jupyterPlugin>, callout: string, request: unknown): unknown {
  const handler = plugin[callout];
  if (!handler) return { status: "Not supported", message: `the Jupyter plugin has no callout ${callout}` };
  try {
    return handler(request as never);
  } catch (err) {
    if (err instanceof Refusal) return { status: "Failure", message: err.message };
    throw err;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function serve(plugin: ReturnType<typeof jupyterPlugin>, host: string, port: number): void {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let reply: unknown;
    let status = 200;
    try {
      const text = Buffer.concat(chunks).toString("utf8");
      reply = answer(plugin, (req.url ?? "/").replace(/^\/+/, ""), text ? JSON.parse(text) : {});
      if ((reply as { status?: string }).status === "Not supported") status = 404;
    } catch (err) {
      status = 400;
      reply = { status: "Failure", message: (err as Error).message };
    }
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(reply));
  });
  server.listen(port, host, () => {
    const address = server.address() as AddressInfo;
    // The first line says where it listens (tests and scripts read it).
    process.stdout.write(`listening on http://${address.address}:${address.port}\n`);
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.on(signal, () => server.close(() => process.exit(0)));
}

async function main(args: string[]): Promise<number> {
  const flag = (name: string) => {
    const at = args.indexOf(name);
    if (at < 0) return undefined;
    const [value] = args.splice(at, 2).slice(1);
    return value;
  };
  const plugin = jupyterPlugin({ image: flag("--image") ?? process.env.JUPYTER_IMAGE });
  const host = flag("--host") ?? "127.0.0.1";
  const port = Number(flag("--port") ?? 0);
  const [command] = args;
  if (command === "serve") {
    serve(plugin, host, port);
    return -1;
  }
  if (!command) {
    process.stderr.write("usage: plugin.ts [--image IMAGE] <callout> | serve [--host H] [--port N]\n");
    return 2;
  }
  const input = await readStdin();
  const reply = answer(plugin, command, input.trim() ? JSON.parse(input) : {});
  process.stdout.write(`${JSON.stringify(reply)}\n`);
  return (reply as { status?: string }).status === "Failure" ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (err: Error) => {
      process.stderr.write(`${err.stack ?? err.message}\n`);
      process.exitCode = 1;
    },
  );
}
