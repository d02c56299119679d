/** What the backup tests share: a runtime service on the process node, and its claims' host folders. */
import assert from "node:assert/strict";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ClusterClient } from "../../src/kube/index.js";
import { LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import type { RuntimePlacement } from "../../src/runtimes/index.js";
import { RUNTIMES_API } from "./runtimes.js";

/** An echo RuntimeService whose runtimes run on the process node with a 256 MiB volume. */
export function echoServiceWithVolume(name: string): KubernetesObject {
  return {
    apiVersion: RUNTIMES_API,
    kind: "RuntimeService",
    metadata: { name },
    spec: {
      plugin: { builtin: "generic" },
      defaults: { image: LOCAL_IMAGES.echo, port: 8080, volumeSize: "256Mi" },
      pods: PROCESS_NODE_PLACEMENT,
    },
  } as KubernetesObject;
}

/** The host folder of a runtime's claim `<name>-data` (the local provisioner's hostPath). */
export async function volumeDirOf(
  client: ClusterClient,
  { namespace, name }: RuntimePlacement,
): Promise<string> {
  const claim = await client.core.readNamespacedPersistentVolumeClaim({ name: `${name}-data`, namespace });
  assert.equal(claim.status?.phase, "Bound");
  const pv = await client.core.readPersistentVolume({ name: claim.spec!.volumeName! });
  return pv.spec!.hostPath!.path;
}
