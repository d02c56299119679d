import { setTimeout as sleep } from "node:timers/promises";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { type ClusterClient, Informer, isAlreadyExists, isConflict, isNotFound } from "../../kube/index.js";

export interface RevocationListOptions {
  client: ClusterClient;
  namespace: string;
  configMapName?: string;
  now?: () => number;
}

/** Entries past this many are refused: the ConfigMap must stay well below etcd's object size limit. */
export const MAX_REVOCATIONS = 20_000;

/**
 * Token ids revoked before they expire, kept in a ConfigMap (`<jti>: <expiry in Unix seconds>`)
 * that every replica watches. An entry is dropped once its token would have expired anyway.
 */
export class RevocationList {
  private readonly informer: Informer<V1ConfigMap>;
  private readonly name: string;
  private readonly now: () => number;

  constructor(private readonly options: RevocationListOptions) {
    this.name = options.configMapName ?? "tenantry-revoked-tokens";
    this.now = options.now ?? Date.now;
    this.informer = Informer.forResource<V1ConfigMap>(options.client, {
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: options.namespace,
      fieldSelector: `metadata.name=${this.name}`,
    });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync({ timeoutMs: 60_000 });
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  isRevoked(jti: string): boolean {
    return this.informer.get(this.options.namespace, this.name)?.data?.[jti] !== undefined;
  }

  /** Revokes a token id until `expiresAt`; waits until this replica's cache has seen it. */
  async revoke(jti: string, expiresAt: Date): Promise<void> {
    const core = this.options.client.core;
    const namespace = this.options.namespace;
    for (let attempt = 0; attempt < 10; attempt++) {
      let current: V1ConfigMap | undefined;
      try {
        current = await core.readNamespacedConfigMap({ name: this.name, namespace });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      const nowSeconds = Math.floor(this.now() / 1000);
      const data = Object.fromEntries(
        Object.entries(current?.data ?? {}).filter(([, exp]) => Number(exp) > nowSeconds),
      );
      if (Object.keys(data).length >= MAX_REVOCATIONS) {
        throw new Error(
          `more than ${MAX_REVOCATIONS} unexpired tokens are revoked: disable the user instead`,
        );
      }
      data[jti] = String(Math.ceil(expiresAt.getTime() / 1000));
      const body: V1ConfigMap = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: this.name,
          namespace,
          labels: { "app.kubernetes.io/managed-by": "tenantry", "app.kubernetes.io/component": "identity" },
          ...(current?.metadata?.resourceVersion
            ? { resourceVersion: current.metadata.resourceVersion }
            : {}),
        },
        data,
      };
      try {
        if (current) await core.replaceNamespacedConfigMap({ name: this.name, namespace, body });
        else await core.createNamespacedConfigMap({ namespace, body });
        await this.waitUntilSeen(jti);
        return;
      } catch (err) {
        if (!isConflict(err) && !isAlreadyExists(err)) throw err;
      }
    }
    throw new Error(`could not update ConfigMap ${namespace}/${this.name}: too many conflicts`);
  }

  private async waitUntilSeen(jti: string): Promise<void> {
    const deadline = this.now() + 10_000;
    while (!this.isRevoked(jti)) {
      if (this.now() > deadline) return;
      await sleep(20);
    }
  }
}
