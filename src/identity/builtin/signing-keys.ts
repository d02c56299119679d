import { randomUUID } from "node:crypto";
import type { V1Secret } from "@kubernetes/client-node";
import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import { type ClusterClient, ignoreNotFound, isAlreadyExists, isConflict } from "../../kube/index.js";

export const SIGNING_ALGORITHM = "ES256";
const DATA_KEY = "keys.json";

interface StoredKey {
  kid: string;
  createdAt: string;
  privateJwk: JWK;
}

export interface SigningKeysOptions {
  client: ClusterClient;
  namespace: string;
  secretName?: string;
  /** A new key signs from this age of the newest one on. Default 24 h. */
  rotateAfterMs?: number;
  /** How long a key keeps verifying after it stopped signing: at least the longest token lifetime. */
  retainMs: number;
  now?: () => number;
}

/**
 * The keys tokens are signed with, kept in one Secret so every replica signs and verifies alike.
 * The newest key signs; older ones verify until every token they signed has expired. Rotation is a
 * compare-and-swap on the Secret, so two replicas rotating at once end with one new key.
 */
export class SigningKeys {
  private keys: StoredKey[] = [];
  private readonly secretName: string;
  private readonly rotateAfterMs: number;
  private readonly now: () => number;
  private lastLoad = 0;

  constructor(private readonly options: SigningKeysOptions) {
    this.secretName = options.secretName ?? "tenantry-token-signing-keys";
    this.rotateAfterMs = options.rotateAfterMs ?? 24 * 3600_000;
    this.now = options.now ?? Date.now;
  }

  /** Loads the keys, creating the first one when there is none, and rotates when due. */
  async load(): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const secret = await this.read();
      const stored = secret ? parseKeys(secret) : [];
      const wanted = await this.rotated(stored);
      if (wanted === stored) {
        this.keys = stored;
        this.lastLoad = this.now();
        return;
      }
      try {
        await this.write(secret, wanted);
        this.keys = wanted;
        this.lastLoad = this.now();
        return;
      } catch (err) {
        // Another replica rotated or created the Secret first: take what it wrote.
        if (!isConflict(err) && !isAlreadyExists(err)) throw err;
      }
    }
    throw new Error(
      `could not update Secret ${this.options.namespace}/${this.secretName}: too many conflicts`,
    );
  }

  /** Reloads when the keys were last read more than `maxAgeMs` ago (another replica may have rotated). */
  async refresh(maxAgeMs: number): Promise<void> {
    if (this.now() - this.lastLoad >= maxAgeMs) await this.load();
  }

  async signingKey(): Promise<{ kid: string; key: Awaited<ReturnType<typeof importJWK>> }> {
    const newest = this.keys.at(-1);
    if (!newest) throw new Error("signing keys are not loaded");
    return { kid: newest.kid, key: await importJWK(newest.privateJwk, SIGNING_ALGORITHM) };
  }

  /** The public keys, as served at the JWKS endpoint. */
  jwks(): { keys: JWK[] } {
    return {
      keys: this.keys.map((k) => {
        const { d: _private, ...publicJwk } = k.privateJwk;
        return { ...publicJwk, kid: k.kid, alg: SIGNING_ALGORITHM, use: "sig" };
      }),
    };
  }

  private async rotated(stored: StoredKey[]): Promise<StoredKey[]> {
    const now = this.now();
    const newest = stored.at(-1);
    if (newest && now - Date.parse(newest.createdAt) < this.rotateAfterMs) return stored;
    const { privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const fresh: StoredKey = {
      kid: randomUUID(),
      createdAt: new Date(now).toISOString(),
      privateJwk: await exportJWK(privateKey),
    };
    // A key stops signing when its successor is created; it verifies for retainMs after that.
    const kept = stored.filter((_key, i) => {
      const successor = stored[i + 1];
      const retiredAt = successor ? Date.parse(successor.createdAt) : now;
      return now - retiredAt < this.options.retainMs;
    });
    return [...kept, fresh];
  }

  private async read(): Promise<V1Secret | undefined> {
    return ignoreNotFound(
      this.options.client.core.readNamespacedSecret({
        name: this.secretName,
        namespace: this.options.namespace,
      }),
    );
  }

  private async write(current: V1Secret | undefined, keys: StoredKey[]): Promise<void> {
    const body: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: this.secretName,
        namespace: this.options.namespace,
        labels: { "app.kubernetes.io/managed-by": "tenantry", "app.kubernetes.io/component": "identity" },
        ...(current?.metadata?.resourceVersion ? { resourceVersion: current.metadata.resourceVersion } : {}),
      },
      type: "Opaque",
      data: { [DATA_KEY]: Buffer.from(JSON.stringify(keys)).toString("base64") },
    };
    const core = this.options.client.core;
    if (current)
      await core.replaceNamespacedSecret({ name: this.secretName, namespace: this.options.namespace, body });
    else await core.createNamespacedSecret({ namespace: this.options.namespace, body });
  }
}

function parseKeys(secret: V1Secret): StoredKey[] {
  const raw = secret.data?.[DATA_KEY];
  if (!raw) return [];
  const parsed = JSON.parse(Buffer.from(raw, "base64").toString()) as StoredKey[];
  return parsed.sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
}
