/**
 * The key sessions and login codes are sealed under. Every replica reads it from one Secret of
 * tenantry's namespace (through the route source's Secret informer), so a cookie set by one replica
 * opens on all of them and survives restarts; replacing the Secret's `key` signs everyone out.
 * Created once, by whichever replica comes first, before the proxy starts.
 */
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, isAlreadyExists } from "../../../kube/index.js";
import { MODULE_SECRETS_NAMESPACE, type RouteSource } from "../source.js";
import { newSessionKey, SESSION_KEY_BYTES } from "./sealed.js";

export const SESSION_KEY_SECRET = "tenantry-runtimes-proxy-session-key";
const KEY_FIELD = "key";

export class SessionKeys {
  private readonly read = new WeakMap<V1Secret, Buffer | null>();
  private ephemeral?: Buffer;

  /**
   * `fixed`: a key given in code (a proxy with routes given in code and no cluster). Without it
   * and without the Secret, a key of this process only: sessions then open on this replica alone.
   */
  constructor(
    private readonly source: RouteSource,
    private readonly logger: Logger,
    private readonly fixed?: Buffer,
  ) {
    if (fixed && fixed.length !== SESSION_KEY_BYTES) {
      throw new Error(`the session key must be ${SESSION_KEY_BYTES} bytes, not ${fixed.length}`);
    }
  }

  /** The current key (a Map lookup once the Secret was read). */
  current(): Buffer {
    if (this.fixed) return this.fixed;
    const secret = this.source.secret(SESSION_KEY_SECRET);
    if (secret) {
      let key = this.read.get(secret);
      if (key === undefined) {
        key = keyOf(secret);
        this.read.set(secret, key);
        if (!key) {
          this.logger.error(
            { secret: `${MODULE_SECRETS_NAMESPACE}/${SESSION_KEY_SECRET}` },
            `the session key Secret's "${KEY_FIELD}" is not ${SESSION_KEY_BYTES} bytes: sessions use a key of this replica only`,
          );
        }
      }
      if (key) return key;
    }
    if (!this.ephemeral) {
      this.ephemeral = newSessionKey();
      if (!secret) {
        this.logger.warn(
          { secret: `${MODULE_SECRETS_NAMESPACE}/${SESSION_KEY_SECRET}` },
          "no session key Secret: runtime sessions open on this replica only",
        );
      }
    }
    return this.ephemeral;
  }
}

function keyOf(secret: V1Secret): Buffer | null {
  const data = secret.data?.[KEY_FIELD];
  const key = data ? Buffer.from(data, "base64") : undefined;
  return key?.length === SESSION_KEY_BYTES ? key : null;
}

/** Creates the session key Secret unless it exists (another replica may create it at the same time). */
export async function ensureSessionKeySecret(client: ClusterClient, namespace = MODULE_SECRETS_NAMESPACE) {
  try {
    await client.core.createNamespacedSecret({
      namespace,
      body: {
        metadata: {
          name: SESSION_KEY_SECRET,
          labels: { "app.kubernetes.io/managed-by": "tenantry" },
        },
        type: "Opaque",
        data: { [KEY_FIELD]: newSessionKey().toString("base64") },
      },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}
