import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { type BuiltinIdentity, requestUserCertificate, userKubeconfig } from "../identity/index.js";
import { applyObject, type ClusterClient } from "../kube/index.js";
import { TENANTS_API_VERSION, withTenantDefaults } from "../tenants/index.js";

export const DEMO_TENANT = "demo";
export const DEMO_OWNER = "alice";
/** A member of the demo tenant, a user of the built-in identity service. */
export const DEMO_MEMBER = "bob";
/** Demo passwords, printed by `tenantry up`: the embedded default is a local playground. */
export const DEMO_PASSWORDS: Record<string, string> = {
  alice: "alice-demo-password",
  bob: "bob-demo-password",
};

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
  return { ownerKubeconfig };
}
