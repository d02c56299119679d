import type { ClusterClient } from "../../kube/index.js";
import { isNotFound } from "../../kube/index.js";
import type { S3Settings } from "./s3.js";

/** The Secret of tenantry's namespace naming the backup store on a real cluster. */
export const STORE_SECRET = "tenantry-backup-store";

const REQUIRED = ["endpoint", "bucket", "accessKeyId", "secretAccessKey"] as const;

/** S3 settings from a Secret's data; a missing key is named. */
export function storeSettingsFromData(data: Record<string, string>, where: string): S3Settings {
  const text = (key: string) => (data[key] ? Buffer.from(data[key], "base64").toString() : undefined);
  const missing = REQUIRED.filter((key) => !text(key));
  if (missing.length) throw new Error(`${where} lacks ${missing.join(", ")}`);
  return {
    endpoint: text("endpoint")!,
    bucket: text("bucket")!,
    accessKeyId: text("accessKeyId")!,
    secretAccessKey: text("secretAccessKey")!,
    ...(text("region") ? { region: text("region")! } : {}),
  };
}

/** The store named by {@link STORE_SECRET}, or undefined when there is none. */
export async function storeSettingsFromSecret(
  client: ClusterClient,
  namespace: string,
): Promise<S3Settings | undefined> {
  try {
    const secret = await client.core.readNamespacedSecret({ name: STORE_SECRET, namespace });
    return storeSettingsFromData(secret.data ?? {}, `Secret ${namespace}/${STORE_SECRET}`);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
