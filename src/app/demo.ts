import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubernetesObject } from "@kubernetes/client-node";
import { pollUntil, UserError } from "../common/index.js";
import { type BuiltinIdentity, requestUserCertificate, userKubeconfig } from "../identity/index.js";
import { applyObject, type ClusterClient } from "../kube/index.js";
import { ensureJupyterServer, LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../localcluster/index.js";
import type { RuntimeService } from "../runtimes/index.js";
import { TENANTS_API_VERSION, withTenantDefaults } from "../tenants/index.js";

export const DEMO_TENANT = "demo";
export const DEMO_OWNER = "alice";
/** A member of the demo tenant, a user of the built-in identity service. */
export const DEMO_MEMBER = "bob";
/** The demo's operator: a built-in user whose group is bound to cluster-admin (sees every tenant). */
export const DEMO_OPERATOR = "operator";
/** The group the demo binds to cluster-admin. */
export const DEMO_OPERATORS_GROUP = "tenantry:operators";
/** Demo passwords, printed by `tenantry up`: the embedded default is a local playground. */
export const DEMO_PASSWORDS: Record<string, string> = {
  alice: "alice-demo-password",
  bob: "bob-demo-password",
  operator: "operator-demo-password",
};

/** Binds a group to cluster-admin: its members administer the cluster (and see every tenant). */
export function operatorsBinding(group: string, name = "tenantry:operators") {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
  } as KubernetesObject;
}

/**
 * The embedded default's demo: tenant `demo` owned by alice with one declared namespace, a quota,
 * room for two namespaces and three worker nodes of its own, plus a kubeconfig for alice signed by
 * the cluster.
 */
export async function installDemo(
  client: ClusterClient,
  dir: string,
  identity?: BuiltinIdentity,
): Promise<{ ownerKubeconfig: string }> {
  const tenant = {
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    metadata: { name: DEMO_TENANT },
    // tenantry's defaults for a new tenant (restricted pod security, quota on compute, ephemeral
    // storage and objects, default requests and limits, images always pulled), a smaller pod quota.
    spec: withTenantDefaults({
      owners: [{ kind: "User", name: DEMO_OWNER }],
      namespaces: [{ name: "dev" }],
      namespaceQuota: 2,
      namespacePrefix: "demo-",
      quota: { hard: { pods: "20" } },
      // Worker nodes of their own (WorkerNode), up to three, from the simulated machines.
      workerNodes: { maxNodes: 3 },
    }),
  } as KubernetesObject;
  await applyObject(client, tenant);
  const credentials = await requestUserCertificate(client.kubeConfig, {
    username: DEMO_OWNER,
    expirationSeconds: 30 * 24 * 3600,
  });
  const ownerKubeconfig = join(dir, `${DEMO_OWNER}.kubeconfig`);
  await writeFile(
    ownerKubeconfig,
    userKubeconfig(client.kubeConfig, credentials, { cluster: "home", namespace: "demo-dev" }),
    { mode: 0o600 },
  );
  // alice and bob can also log in with a password (`tenantry login`): alice owns the tenant, bob
  // joins it as a member at his first login.
  for (const [name, admin] of [
    [DEMO_OWNER, true],
    [DEMO_MEMBER, false],
  ] as const) {
    if (identity && !(await identity.readUser(name))) {
      await identity.createUser({
        name,
        password: DEMO_PASSWORDS[name]!,
        tenant: DEMO_TENANT,
        tenantAdmin: admin,
      });
    }
  }
  // The operator, for the dashboard: a password login whose group administers the cluster.
  if (identity) {
    await applyObject(client, operatorsBinding(DEMO_OPERATORS_GROUP));
    if (!(await identity.readUser(DEMO_OPERATOR))) {
      await identity.createUser({
        name: DEMO_OPERATOR,
        password: DEMO_PASSWORDS[DEMO_OPERATOR]!,
        groups: [DEMO_OPERATORS_GROUP],
      });
    }
  }
  return { ownerKubeconfig };
}

/** The runtime `tenantry up` starts for the demo owner: `<service>/lab`. */
export const DEMO_RUNTIME_INSTANCE = "lab";

export interface DemoRuntimeService {
  /** The RuntimeService's name, the `{service}` of the Admin API's paths. */
  name: string;
  /** What its runtimes are: a real Jupyter Server, or the echo server where Python is missing. */
  kind: "jupyter" | "echo";
  /** Why it is the echo server. */
  fallbackReason?: string;
}

/** The example Jupyter plugin, run as an executable by tenantry (flex-volume style). */
const JUPYTER_PLUGIN = fileURLToPath(
  new URL("../../examples/runtime-plugins/jupyter/plugin.ts", import.meta.url),
);

/**
 * The demo's RuntimeService, its runtimes placed on the home cluster's process node so that they
 * serve for real: a Jupyter Server through the example plugin (installing Jupyter Server from PyPI
 * first, with progress: the process node's "image pull"), or, where Python 3 with venv is missing,
 * the echo server through the generic plugin. Waits until the service is Ready.
 */
export async function installDemoRuntimeService(
  client: ClusterClient,
  progress?: (done: number, total: number, detail: string) => void,
): Promise<DemoRuntimeService> {
  let service: DemoRuntimeService;
  let spec: Record<string, unknown>;
  try {
    await ensureJupyterServer(progress ? { progress } : {});
    service = { name: "jupyter", kind: "jupyter" };
    spec = {
      plugin: {
        exec: {
          command: [
            process.execPath,
            "--import",
            import.meta.resolve("tsx"),
            JUPYTER_PLUGIN,
            "--image",
            LOCAL_IMAGES.jupyter,
          ],
          timeoutSeconds: 60,
        },
      },
      defaults: { volumeSize: "1Gi" },
    };
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    service = { name: "echo", kind: "echo", fallbackReason: err.message };
    spec = {
      plugin: { builtin: "generic" },
      defaults: { image: LOCAL_IMAGES.echo, port: 8080, volumeSize: "64Mi" },
    };
  }
  const object = {
    apiVersion: TENANTS_API_VERSION,
    kind: "RuntimeService",
    metadata: { name: service.name },
    spec: { ...spec, pods: PROCESS_NODE_PLACEMENT, startTimeoutSeconds: 600 },
  } as KubernetesObject;
  await applyObject(client, object);
  let ready: { status?: string; message?: string } | undefined;
  const done = await pollUntil(
    async () => {
      const current = (await client.objects.read(object as never)) as RuntimeService;
      ready = current.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "True" || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  if (done) return service;
  throw new Error(
    `RuntimeService ${service.name} is not Ready after 120 s: ${ready?.message ?? "no Ready condition"}`,
  );
}

/** The login token of a Jupyter runtime of the example plugin: its Secret `<runtime>-token`. */
export async function jupyterTokenOf(
  client: ClusterClient,
  namespace: string,
  runtime: string,
): Promise<string> {
  const secret = await client.core.readNamespacedSecret({ name: `${runtime}-token`, namespace });
  return Buffer.from(secret.data?.token ?? "", "base64").toString();
}
