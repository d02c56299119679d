/**
 * A runtime plugin served over HTTP by the test process, speaking the real callout protocol, whose
 * answers the tests steer through each runtime's parameters (`mode`): a well-behaved runtime with a
 * claim and a Secret, YAML with a forbidden kind or another namespace, a slow answer, a dropped
 * connection, a refusal. It records every call, so tests can see deregister-service happen.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { stringify } from "yaml";
import type { DeployServiceRequest, RuntimeRegistration } from "../../src/runtimes/index.js";

export interface PluginCall {
  callout: string;
  body: Record<string, unknown>;
}

export interface TestPlugin {
  url: string;
  calls: PluginCall[];
  /** What image-pull answers. */
  images: string[];
  /** What image-cleanup answers (of the images it is given). */
  cleanup: (images: string[]) => string[];
  /** Make init fail with this message (undefined: init answers). */
  initFailure?: string;
  deregistered(name: string): RuntimeRegistration[];
  close(): Promise<void>;
}

/** A well-behaved runtime: Deployment, Service, a claim (class from `storageClassName`) and a Secret. */
export function runtimeObjects(request: DeployServiceRequest): object[] {
  const { name, namespace } = request.registration;
  const config = request.config as { storageClassName?: string; image?: string };
  const labels = { app: "test-plugin", instance: name };
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: `${name}-secret`, namespace },
      data: { password: randomBytes(12).toString("base64") },
    },
    {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: `${name}-data`, namespace },
      spec: {
        accessModes: ["ReadWriteOnce"],
        resources: { requests: { storage: "1Gi" } },
        ...(config.storageClassName ? { storageClassName: config.storageClassName } : {}),
      },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: "app",
                image: config.image ?? "example/app:1",
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: "/", port: 8080 } },
                resources: {
                  requests: { cpu: "10m", memory: "16Mi" },
                  limits: { cpu: "10m", memory: "16Mi" },
                },
                volumeMounts: [{ name: "data", mountPath: "/data" }],
                env: [
                  {
                    name: "PASSWORD",
                    valueFrom: { secretKeyRef: { name: `${name}-secret`, key: "password" } },
                  },
                ],
              },
            ],
            volumes: [{ name: "data", persistentVolumeClaim: { claimName: `${name}-data` } }],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace },
      spec: { selector: labels, ports: [{ port: 8080 }] },
    },
  ];
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

const MODES = ["ok", "slow", "crash", "fail", "forbidden-kind", "other-namespace"];

/** What the test plugin answers to one callout; `undefined` when the connection is to be dropped. */
export async function answerCallout(
  callout: string,
  body: Record<string, unknown>,
  state: Pick<TestPlugin, "images" | "cleanup" | "initFailure">,
): Promise<{ status: number; reply: unknown } | undefined> {
  const ok = (reply: unknown) => ({ status: 200, reply });
  switch (callout) {
    case "init":
      if (state.initFailure) return ok({ status: "Failure", message: state.initFailure });
      return ok({
        capabilities: [
          "deploy-service",
          "check-service",
          "deregister-service",
          "image-pull",
          "image-cleanup",
        ],
      });
    case "deploy-service": {
      const request = body as unknown as DeployServiceRequest;
      const mode = (request.config as { mode?: string }).mode ?? "ok";
      if (!MODES.includes(mode)) {
        return ok({
          status: "Failure",
          message: `mode: ${JSON.stringify(mode)} is not one of ${MODES.join(", ")}`,
        });
      }
      const objects = runtimeObjects(request);
      const reg = request.registration;
      if (mode === "slow") await new Promise((resolve) => setTimeout(resolve, 5_000));
      if (mode === "crash") return undefined;
      if (mode === "fail") return ok({ status: "Failure", message: `no capacity left for ${reg.name}` });
      if (mode === "forbidden-kind") {
        objects.push({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: `${reg.name}-admin`, namespace: reg.namespace },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" },
          subjects: [{ kind: "User", name: reg.user }],
        });
      }
      if (mode === "other-namespace") {
        objects.push({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `${reg.name}-elsewhere`, namespace: "kube-system" },
          data: { a: "b" },
        });
      }
      return ok({ yaml: objects.map((o) => stringify(o)).join("---\n"), endpoint: { port: 8080 } });
    }
    case "check-service": {
      const { current, proposed } = body as {
        current: Record<string, unknown>;
        proposed: Record<string, unknown>;
      };
      if ((current.storageClassName ?? null) !== (proposed.storageClassName ?? null)) {
        return ok({
          compatible: false,
          field: "storageClassName",
          message: "the claim exists with its class",
        });
      }
      return ok({ compatible: true });
    }
    case "deregister-service":
      return ok({});
    case "image-pull":
      return ok({ images: state.images });
    case "image-cleanup":
      return ok({ images: state.cleanup((body as { images: string[] }).images) });
    default:
      return { status: 404, reply: { status: "Not supported", message: `no callout ${callout}` } };
  }
}

export async function startTestPlugin(): Promise<TestPlugin> {
  const calls: PluginCall[] = [];
  const plugin: TestPlugin = {
    url: "",
    calls,
    images: ["example/app:1"],
    cleanup: (images) => images,
    deregistered: (name) =>
      calls
        .filter((c) => c.callout === "deregister-service")
        .map((c) => c.body.registration as RuntimeRegistration)
        .filter((r) => r.name === name),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer(async (req, res) => {
    const callout = (req.url ?? "/").slice(1);
    const body = await readJson(req);
    calls.push({ callout, body });
    const answered = await answerCallout(callout, body, plugin);
    if (!answered) return req.socket.destroy();
    res.writeHead(answered.status, { "content-type": "application/json" });
    res.end(JSON.stringify(answered.reply));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  plugin.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return plugin;
}
