import type { V1Secret } from "@kubernetes/client-node";
import { type ClusterClient, isNotFound } from "../../kube/index.js";
import type { NodeProvider } from "../api/node-provider.js";
import { type OpenStackCredentials, OpenStackProvider } from "./openstack.js";
import { type LocalMachineHost, SimulatedProvider } from "./simulated.js";
import { type MachineProvider, ProviderError } from "./spi.js";

export interface ProviderRegistryOptions {
  client: ClusterClient;
  /** tenantry's namespace: where credentials Secrets are looked for by default. */
  namespace: string;
  /** The harness's machines, in the embedded default only. */
  localMachines?: LocalMachineHost;
  /** How long a provider's credentials are used before their Secret is read again. Default 60 s. */
  credentialsTtlMs?: number;
}

interface Cached {
  generation: number;
  secretVersion?: string;
  checkedAt: number;
  provider: MachineProvider;
}

function decode(secret: V1Secret, key: string): string | undefined {
  const value = secret.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, "base64").toString().trim();
}

/** The credentials a Secret holds, or a message naming what is missing. */
export function credentialsFromSecret(secret: V1Secret, where: string): OpenStackCredentials {
  const id = decode(secret, "application_credential_id");
  const credentialSecret = decode(secret, "application_credential_secret");
  if (id || credentialSecret) {
    if (!id || !credentialSecret)
      throw new ProviderError(
        `${where} has only one of application_credential_id and application_credential_secret`,
        true,
      );
    return { kind: "applicationCredential", id, secret: credentialSecret };
  }
  const username = decode(secret, "username");
  const password = decode(secret, "password");
  const projectName = decode(secret, "project_name");
  const missing = [
    ["username", username],
    ["password", password],
    ["project_name", projectName],
  ].filter(([, v]) => !v);
  if (missing.length)
    throw new ProviderError(
      `${where} needs application_credential_id and application_credential_secret, or username, password and project_name (missing: ${missing.map(([k]) => k).join(", ")})`,
      true,
    );
  return {
    kind: "password",
    username: username!,
    password: password!,
    projectName: projectName!,
    userDomainName: decode(secret, "user_domain_name") ?? "Default",
    projectDomainName: decode(secret, "project_domain_name") ?? "Default",
  };
}

/**
 * One MachineProvider per NodeProvider, built from its spec and credentials and kept while the
 * spec's generation and the credentials Secret stay the same (the Secret is read again at most
 * once a minute, so rotated credentials are picked up without a restart).
 */
export class ProviderRegistry {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly options: ProviderRegistryOptions) {}

  get hasLocalMachines(): boolean {
    return this.options.localMachines !== undefined;
  }

  async providerFor(object: NodeProvider): Promise<MachineProvider> {
    const name = object.metadata!.name!;
    const generation = object.metadata?.generation ?? 0;
    const cached = this.cache.get(name);
    const ttl = this.options.credentialsTtlMs ?? 60_000;
    if (cached && cached.generation === generation && Date.now() - cached.checkedAt < ttl)
      return cached.provider;
    if (object.spec.type === "simulated") {
      const host = this.options.localMachines;
      if (!host) {
        throw new ProviderError(
          "this tenantry has no simulated machines: the simulated provider exists only in the embedded default (`tenantry up`)",
          true,
        );
      }
      const provider = cached?.generation === generation ? cached.provider : new SimulatedProvider(host);
      this.cache.set(name, { generation, checkedAt: Date.now(), provider });
      return provider;
    }
    const spec = object.spec.openstack;
    if (!spec) throw new ProviderError("spec.openstack is missing", true);
    const ref = spec.credentialsSecret;
    const namespace = ref.namespace ?? this.options.namespace;
    const where = `Secret ${namespace}/${ref.name}`;
    let secret: V1Secret;
    try {
      secret = await this.options.client.core.readNamespacedSecret({ name: ref.name, namespace });
    } catch (err) {
      if (isNotFound(err))
        throw new ProviderError(`${where} (spec.openstack.credentialsSecret) does not exist`, true);
      throw err;
    }
    const secretVersion = secret.metadata?.resourceVersion;
    if (cached && cached.generation === generation && cached.secretVersion === secretVersion) {
      cached.checkedAt = Date.now();
      return cached.provider;
    }
    const provider = new OpenStackProvider({
      authUrl: spec.authUrl,
      credentials: credentialsFromSecret(secret, where),
      ...(spec.region ? { region: spec.region } : {}),
      ...(spec.interface ? { interface: spec.interface } : {}),
      ...(spec.image ? { image: spec.image } : {}),
      ...(spec.networkMode ? { networkMode: spec.networkMode } : {}),
      ...(spec.networks ? { networks: spec.networks } : {}),
    });
    cached?.provider.close?.();
    this.cache.set(name, {
      generation,
      ...(secretVersion ? { secretVersion } : {}),
      checkedAt: Date.now(),
      provider,
    });
    return provider;
  }

  forget(name: string): void {
    this.cache.get(name)?.provider.close?.();
    this.cache.delete(name);
  }
}
