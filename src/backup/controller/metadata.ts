import { createHash } from "node:crypto";
import type {
  KubernetesObject,
  V1ConfigMap,
  V1PersistentVolumeClaim,
  V1Secret,
} from "@kubernetes/client-node";
import type { ClusterClient } from "../../kube/index.js";
import { RUNTIME_LABEL, type Runtime } from "../../runtimes/index.js";
import { decryptor, encryptor } from "../crypto.js";
import type { ObjectStore } from "../store/spi.js";
import { claimTemplate } from "./agent-jobs.js";

/** What a backup's metadata archive holds: the runtime's own objects, as they can be created again. */
export interface MetadataArchive {
  runtime: Runtime;
  secrets: V1Secret[];
  configMaps: V1ConfigMap[];
  claims: V1PersistentVolumeClaim[];
}

interface SealedRecord {
  iv: string;
  tag: string;
  sha256: string;
  size: number;
}

/** An object without what the API server sets, ready to be created again. */
function portable<T extends KubernetesObject>(obj: T, apiVersion: string, kind: string): T {
  const { metadata, ...rest } = obj as T & { status?: unknown };
  const { status: _status, ...body } = rest as typeof rest & { status?: unknown };
  return {
    ...body,
    apiVersion,
    kind,
    metadata: {
      name: metadata!.name,
      namespace: metadata!.namespace,
      ...(metadata?.labels ? { labels: metadata.labels } : {}),
      ...(metadata?.annotations ? { annotations: metadata.annotations } : {}),
    },
  } as T;
}

export async function collectMetadata(client: ClusterClient, runtime: Runtime): Promise<MetadataArchive> {
  const namespace = runtime.metadata!.namespace!;
  const labelSelector = `${RUNTIME_LABEL}=${runtime.metadata!.name}`;
  const [secrets, configMaps, claims] = await Promise.all([
    client.core.listNamespacedSecret({ namespace, labelSelector }),
    client.core.listNamespacedConfigMap({ namespace, labelSelector }),
    client.core.listNamespacedPersistentVolumeClaim({ namespace, labelSelector }),
  ]);
  const { finalizers: _finalizers, ...runtimeMeta } = portable(runtime, runtime.apiVersion!, "Runtime")
    .metadata!;
  return {
    runtime: { ...portable(runtime, runtime.apiVersion!, "Runtime"), metadata: runtimeMeta } as Runtime,
    secrets: secrets.items.map((s) => portable(s, "v1", "Secret")),
    configMaps: configMaps.items.map((c) => portable(c, "v1", "ConfigMap")),
    claims: claims.items.map(claimTemplate),
  };
}

export async function putMetadata(
  store: ObjectStore,
  key: string,
  archive: MetadataArchive,
  tenantKey: Buffer,
): Promise<number> {
  const plain = Buffer.from(JSON.stringify(archive));
  const encryption = encryptor(tenantKey);
  const sealed = Buffer.concat([encryption.stream.update(plain), encryption.stream.final()]);
  const record: SealedRecord = {
    ...encryption.sealed(),
    sha256: createHash("sha256").update(plain).digest("hex"),
    size: plain.length,
  };
  await store.put(key, sealed);
  await store.put(`${key}.json`, Buffer.from(JSON.stringify(record)));
  return 1 + archive.secrets.length + archive.configMaps.length + archive.claims.length;
}

async function bytesOf(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The metadata archive back, decrypted and checked; throws when a byte was changed. */
export async function getMetadata(
  store: ObjectStore,
  key: string,
  tenantKey: Buffer,
): Promise<MetadataArchive> {
  const record = JSON.parse((await bytesOf(await store.get(`${key}.json`))).toString()) as SealedRecord;
  const sealed = await bytesOf(await store.get(key));
  const decipher = decryptor(tenantKey, record);
  const plain = Buffer.concat([decipher.update(sealed), decipher.final()]);
  if (createHash("sha256").update(plain).digest("hex") !== record.sha256)
    throw new Error(`the metadata in ${key} is not what was backed up (SHA-256 differs)`);
  return JSON.parse(plain.toString()) as MetadataArchive;
}
