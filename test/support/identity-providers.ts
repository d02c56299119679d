/**
 * tenantry's run-time identity providers (Secret `tenantry-identity-providers`, key
 * `providers.yaml`) on the run's home cluster, shared by test files that run at once: each sets
 * and clears only its own section (`keystone`, `oidc`), read and written conditionally on the
 * Secret's resourceVersion, so that one file's Keystone never replaces another's OpenID provider.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { PROVIDER_CONFIG_KEY, PROVIDER_CONFIG_SECRET } from "../../src/identity/index.js";
import { isAlreadyExists, isConflict, isNotFound, loadClusterClient } from "../../src/kube/index.js";
import { testEnvironment } from "./clusters.js";

const NAMESPACE = "tenantry-system";
const ATTEMPTS = 20;

type Sections = Record<string, unknown>;

function home() {
  return loadClusterClient("home", testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig);
}

function sectionsOf(secret: V1Secret): Sections {
  const text = secret.data?.[PROVIDER_CONFIG_KEY];
  return text ? ((parse(Buffer.from(text, "base64").toString()) ?? {}) as Sections) : {};
}

/** Sets `section` of the providers (undefined: removes it), leaving every other section as it is. */
export async function setProviderSection(section: "keystone" | "oidc", value: unknown): Promise<void> {
  const { core } = home();
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const current = await core
      .readNamespacedSecret({ name: PROVIDER_CONFIG_SECRET, namespace: NAMESPACE })
      .catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
    const sections = current ? sectionsOf(current) : {};
    if (value === undefined) delete sections[section];
    else sections[section] = value;
    try {
      if (!current) {
        if (value === undefined) return;
        await core.createNamespacedSecret({
          namespace: NAMESPACE,
          body: {
            metadata: { name: PROVIDER_CONFIG_SECRET, namespace: NAMESPACE },
            stringData: { [PROVIDER_CONFIG_KEY]: stringify(sections) },
          },
        });
      } else if (Object.keys(sections).length === 0) {
        await core.deleteNamespacedSecret({
          name: PROVIDER_CONFIG_SECRET,
          namespace: NAMESPACE,
          body: { preconditions: { resourceVersion: current.metadata!.resourceVersion! } },
        });
      } else {
        await core.replaceNamespacedSecret({
          name: PROVIDER_CONFIG_SECRET,
          namespace: NAMESPACE,
          body: {
            metadata: {
              name: PROVIDER_CONFIG_SECRET,
              namespace: NAMESPACE,
              resourceVersion: current.metadata!.resourceVersion!,
            },
            type: "Opaque",
            data: { [PROVIDER_CONFIG_KEY]: Buffer.from(stringify(sections)).toString("base64") },
          },
        });
      }
      return;
    } catch (err) {
      // Another file wrote in between (or created it first, or it is gone): read again.
      if (!isConflict(err) && !isAlreadyExists(err) && !isNotFound(err)) throw err;
    }
  }
  throw new Error(`${PROVIDER_CONFIG_SECRET}: ${ATTEMPTS} conflicting writes in a row`);
}
