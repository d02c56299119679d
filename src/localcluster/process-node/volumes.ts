import { existsSync } from "node:fs";
import { chmod, mkdir, readdir, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, normalize } from "node:path";
import type {
  V1Container,
  V1KeyToPath,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Volume,
  V1VolumeProjection,
} from "@kubernetes/client-node";
import {
  ContainerConfigError,
  type EnvSources,
  expandReferences,
  fieldValue,
  type PodAddresses,
  resourceValue,
} from "./env.js";

/**
 * A pod's volumes as folders on this machine: a claim's volume is its PersistentVolume's folder
 * (the local provisioner's hostPath, made when missing; a `local` volume's path, which must exist),
 * emptyDir a folder of the pod, secret/configMap/downwardAPI
 * and projected volumes (service account tokens through the TokenRequest API) files written for
 * the pod, refreshed on every sync. Processes cannot see container paths, so each container gets
 * a table from its mount paths to these folders.
 */

/** A volume the kubelet cannot set up yet (claim unbound, secret missing): retried, reported as FailedMount. */
export class VolumeError extends Error {}

export interface VolumeSources extends EnvSources {
  claim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined>;
  volume(name: string): Promise<V1PersistentVolume | undefined>;
  /** A TokenRequest for the pod's service account, bound to the pod. */
  token(
    pod: V1Pod,
    audience: string | undefined,
    expirationSeconds: number,
  ): Promise<{ token: string; expiresAt: Date }>;
}

export interface PreparedVolumes {
  /** Volume name → host folder (or file, for a hostPath file). */
  paths: Map<string, string>;
  /** When the earliest projected token must be renewed (at 80% of its lifetime, as the kubelet does). */
  renewAt?: number;
  /**
   * The service account token files written (0600), with the mode their projected volume gives
   * them when the pod's containers do not share one user (sandbox/ownership.ts decides).
   */
  tokens: ProjectedToken[];
}

export interface ProjectedToken {
  file: string;
  defaultMode: number;
}

async function writeEntries(
  dir: string,
  entries: { path: string; content: Buffer; mode?: number }[],
  defaultMode = 0o644,
) {
  await mkdir(dir, { recursive: true });
  const wanted = new Set<string>();
  for (const entry of entries) {
    const relative = normalize(entry.path);
    if (relative.startsWith("..") || relative.startsWith("/"))
      throw new ContainerConfigError(
        `volume item path "${entry.path}" must be relative and stay inside the volume`,
      );
    const file = join(dir, relative);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, entry.content);
    await chmod(file, entry.mode ?? defaultMode);
    wanted.add(relative.split("/")[0]!);
  }
  // Keys removed from the source disappear from the volume.
  for (const name of await readdir(dir))
    if (!wanted.has(name)) await rm(join(dir, name), { recursive: true, force: true });
}

function keyed(
  data: Record<string, Buffer>,
  items: V1KeyToPath[] | undefined,
  what: string,
  optional: boolean | undefined,
): { path: string; content: Buffer; mode?: number }[] {
  if (!items?.length) return Object.entries(data).map(([key, content]) => ({ path: key, content }));
  const entries: { path: string; content: Buffer; mode?: number }[] = [];
  for (const item of items) {
    const content = data[item.key];
    if (content === undefined) {
      if (optional) continue;
      throw new VolumeError(`couldn't find key ${item.key} in ${what}`);
    }
    entries.push({ path: item.path, content, ...(item.mode !== undefined ? { mode: item.mode } : {}) });
  }
  return entries;
}

const decode = (data: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")]));
const text = (data: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "utf8")]));

interface Context {
  pod: V1Pod;
  sources: VolumeSources;
  addresses: PodAddresses;
  allocatable: Record<string, string>;
  renewAt?: number;
  /** Token paths inside the volume being written. */
  tokenPaths?: string[];
}

async function secretEntries(
  ctx: Context,
  name: string,
  items: V1KeyToPath[] | undefined,
  optional?: boolean,
) {
  const namespace = ctx.pod.metadata!.namespace!;
  const secret = await ctx.sources.secret(namespace, name);
  if (!secret) {
    if (optional) return [];
    throw new VolumeError(`secret "${name}" not found`);
  }
  return keyed(decode(secret.data), items, `Secret ${namespace}/${name}`, optional);
}

async function configMapEntries(
  ctx: Context,
  name: string,
  items: V1KeyToPath[] | undefined,
  optional?: boolean,
) {
  const namespace = ctx.pod.metadata!.namespace!;
  const map = await ctx.sources.configMap(namespace, name);
  if (!map) {
    if (optional) return [];
    throw new VolumeError(`configmap "${name}" not found`);
  }
  return keyed(
    { ...text(map.data), ...decode(map.binaryData) },
    items,
    `ConfigMap ${namespace}/${name}`,
    optional,
  );
}

function downwardEntries(
  ctx: Context,
  items: V1VolumeProjection["downwardAPI"],
): { path: string; content: Buffer; mode?: number }[] {
  return (items?.items ?? []).map((item) => {
    let value: string;
    if (item.fieldRef) value = fieldValue(ctx.pod, item.fieldRef.fieldPath, ctx.addresses);
    else if (item.resourceFieldRef) {
      const container = [...(ctx.pod.spec?.initContainers ?? []), ...(ctx.pod.spec?.containers ?? [])].find(
        (c) => c.name === item.resourceFieldRef!.containerName,
      );
      if (!container)
        throw new ContainerConfigError(
          `downwardAPI item ${item.path}: no container "${item.resourceFieldRef.containerName}"`,
        );
      const divisor = item.resourceFieldRef.divisor;
      value = resourceValue(
        container,
        item.resourceFieldRef.resource,
        divisor === undefined ? undefined : String(divisor),
        ctx.allocatable,
      );
    } else value = "";
    return {
      path: item.path,
      content: Buffer.from(value),
      ...(item.mode !== undefined ? { mode: item.mode } : {}),
    };
  });
}

async function projectedEntries(ctx: Context, sources: V1VolumeProjection[]) {
  const entries: { path: string; content: Buffer; mode?: number }[] = [];
  for (const source of sources) {
    if (source.secret)
      entries.push(
        ...(await secretEntries(ctx, source.secret.name!, source.secret.items, source.secret.optional)),
      );
    if (source.configMap)
      entries.push(
        ...(await configMapEntries(
          ctx,
          source.configMap.name!,
          source.configMap.items,
          source.configMap.optional,
        )),
      );
    if (source.downwardAPI) entries.push(...downwardEntries(ctx, source.downwardAPI));
    if (source.serviceAccountToken) {
      const request = source.serviceAccountToken;
      const seconds = request.expirationSeconds ?? 3600;
      const { token, expiresAt } = await ctx.sources.token(ctx.pod, request.audience || undefined, seconds);
      const renewAt = Date.now() + (expiresAt.getTime() - Date.now()) * 0.8;
      ctx.renewAt = Math.min(ctx.renewAt ?? Number.POSITIVE_INFINITY, renewAt);
      entries.push({ path: request.path, content: Buffer.from(token), mode: 0o600 });
      ctx.tokenPaths?.push(request.path);
    }
  }
  return entries;
}

async function hostPath(volume: V1Volume): Promise<string> {
  const { path, type = "" } = volume.hostPath!;
  const exists = existsSync(path);
  switch (type) {
    case "DirectoryOrCreate":
      await mkdir(path, { recursive: true });
      break;
    case "FileOrCreate":
      if (!exists) {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, "");
      }
      break;
    case "Directory":
      if (!exists || !(await stat(path)).isDirectory())
        throw new VolumeError(`hostPath type check failed: ${path} is not a directory`);
      break;
    case "File":
      if (!exists || !(await stat(path)).isFile())
        throw new VolumeError(`hostPath type check failed: ${path} is not a file`);
      break;
    case "CharDevice":
      if (!exists || !(await stat(path)).isCharacterDevice())
        throw new VolumeError(`hostPath type check failed: ${path} is not a character device`);
      break;
    default:
      break;
  }
  return path;
}

async function claimPath(ctx: Context, volume: V1Volume): Promise<string> {
  const namespace = ctx.pod.metadata!.namespace!;
  const claimName = volume.persistentVolumeClaim!.claimName;
  const claim = await ctx.sources.claim(namespace, claimName);
  if (!claim) throw new VolumeError(`persistentvolumeclaim "${claimName}" not found`);
  const volumeName = claim.spec?.volumeName;
  if (!volumeName || claim.status?.phase !== "Bound")
    throw new VolumeError(`persistentvolumeclaim "${claimName}" is not bound`);
  const pv = await ctx.sources.volume(volumeName);
  const local = pv?.spec?.local?.path;
  if (local) {
    // As the kubelet does for a local volume: its provisioner made the folder (for an encrypted
    // volume, only once it is mounted and unlocked); making it here would put data beside it.
    if (!existsSync(local) || !(await stat(local)).isDirectory())
      throw new VolumeError(`path "${local}" of local volume ${volumeName} does not exist (yet)`);
    return local;
  }
  const path = pv?.spec?.hostPath?.path;
  if (!path)
    throw new VolumeError(
      `PersistentVolume ${volumeName} of claim "${claimName}" is not a hostPath or local volume, which is all the process node mounts`,
    );
  await mkdir(path, { recursive: true });
  return path;
}

/** Sets up (or refreshes) every volume of the pod under `podDir/volumes`. */
export async function prepareVolumes(
  pod: V1Pod,
  podDir: string,
  sources: VolumeSources,
  addresses: PodAddresses,
  allocatable: Record<string, string>,
): Promise<PreparedVolumes> {
  const ctx: Context = { pod, sources, addresses, allocatable };
  const paths = new Map<string, string>();
  const tokens: ProjectedToken[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    const own = join(podDir, "volumes", volume.name);
    try {
      if (volume.emptyDir) {
        await mkdir(own, { recursive: true });
        paths.set(volume.name, own);
      } else if (volume.hostPath) {
        paths.set(volume.name, await hostPath(volume));
      } else if (volume.persistentVolumeClaim) {
        paths.set(volume.name, await claimPath(ctx, volume));
      } else if (volume.secret) {
        const s = volume.secret;
        await writeEntries(
          own,
          await secretEntries(ctx, s.secretName!, s.items, s.optional),
          s.defaultMode ?? 0o644,
        );
        paths.set(volume.name, own);
      } else if (volume.configMap) {
        const c = volume.configMap;
        await writeEntries(
          own,
          await configMapEntries(ctx, c.name!, c.items, c.optional),
          c.defaultMode ?? 0o644,
        );
        paths.set(volume.name, own);
      } else if (volume.downwardAPI) {
        await writeEntries(
          own,
          downwardEntries(ctx, volume.downwardAPI),
          volume.downwardAPI.defaultMode ?? 0o644,
        );
        paths.set(volume.name, own);
      } else if (volume.projected) {
        const defaultMode = volume.projected.defaultMode ?? 0o644;
        ctx.tokenPaths = [];
        await writeEntries(own, await projectedEntries(ctx, volume.projected.sources ?? []), defaultMode);
        tokens.push(...ctx.tokenPaths.map((path) => ({ file: join(own, normalize(path)), defaultMode })));
        paths.set(volume.name, own);
      } else {
        const kind = Object.keys(volume).find((k) => k !== "name") ?? "unknown";
        throw new VolumeError(
          `${kind} volumes are not supported on the process node (emptyDir, hostPath, persistentVolumeClaim, secret, configMap, downwardAPI and projected are)`,
        );
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const wrapped =
        err instanceof ContainerConfigError ? new ContainerConfigError(message) : new VolumeError(message);
      wrapped.message = `MountVolume.SetUp failed for volume "${volume.name}" : ${message}`;
      throw wrapped;
    }
  }
  return { paths, tokens, ...(ctx.renewAt !== undefined ? { renewAt: ctx.renewAt } : {}) };
}

/** A container's mount paths (no trailing slash) → host paths, subPath and subPathExpr applied. */
export async function containerMounts(
  container: V1Container,
  volumes: ReadonlyMap<string, string>,
  env: ReadonlyMap<string, string>,
): Promise<Map<string, string>> {
  const mounts = new Map<string, string>();
  for (const mount of container.volumeMounts ?? []) {
    const base = volumes.get(mount.name);
    if (base === undefined)
      throw new ContainerConfigError(`volumeMount "${mount.name}" names no volume of the pod`);
    const sub = mount.subPathExpr ? expandReferences(mount.subPathExpr, env) : mount.subPath;
    let path = base;
    if (sub) {
      const relative = normalize(sub);
      if (relative.startsWith("..") || relative.startsWith("/"))
        throw new ContainerConfigError(
          `subPath "${sub}" must be relative and stay inside volume "${mount.name}"`,
        );
      path = join(base, relative);
      if (!existsSync(path)) await mkdir(path, { recursive: true });
    }
    mounts.set(mount.mountPath.replace(/\/+$/, "") || "/", path);
  }
  return mounts;
}
