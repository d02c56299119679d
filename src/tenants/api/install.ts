import { setTimeout as sleep } from "node:timers/promises";
import {
  ApiException,
  ApiextensionsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { CustomResourceDefinition } from "../../apis/index.js";
import { TENANTS_CRDS } from "./crds.js";

/** The server-side apply field manager every tenantry writer uses. */
const FIELD_MANAGER = "tenantry";

export interface InstallCrdsOptions {
  /** How long to wait for every CRD to become Established (default 60 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Defaults to the tenants capability's CRDs. */
  crds?: readonly CustomResourceDefinition[];
}

function serverMessage(err: unknown): string {
  if (err instanceof ApiException) {
    try {
      const status = (typeof err.body === "string" ? JSON.parse(err.body) : err.body) as { message?: string };
      if (status?.message) return `${status.message} (HTTP ${err.code})`;
    } catch {
      // Not a Status object: fall through to the HTTP code.
    }
    return `HTTP ${err.code}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Server-side applies the CRDs (field manager `tenantry`, forced: tenantry owns them) and waits
 * until the API server serves each of them. Idempotent: applying unchanged CRDs changes nothing.
 */
export async function installCrds(kubeConfig: KubeConfig, options: InstallCrdsOptions = {}): Promise<void> {
  const crds = options.crds ?? TENANTS_CRDS;
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  // The typed API sends `body` as is; KubernetesObjectApi would re-serialize it through
  // client-node's model classes, which drop `x-kubernetes-*`, `default` and `enum` keys.
  const applyPatch = setHeaderOptions("Content-Type", PatchStrategy.ServerSideApply);
  await Promise.all(
    crds.map(async (crd) => {
      try {
        await api.patchCustomResourceDefinition(
          { name: crd.metadata.name, body: crd, fieldManager: FIELD_MANAGER, force: true },
          applyPatch,
        );
      } catch (err) {
        throw new Error(`applying CustomResourceDefinition ${crd.metadata.name}: ${serverMessage(err)}`);
      }
    }),
  );
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  await Promise.all(
    crds.map((crd) => waitUntilEstablished(api, crd.metadata.name, deadline, options.signal)),
  );
}

async function waitUntilEstablished(
  api: ApiextensionsV1Api,
  name: string,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  let delayMs = 50;
  let last = "not observed yet";
  for (;;) {
    signal?.throwIfAborted();
    const crd = await api.readCustomResourceDefinition({ name });
    const conditions = crd.status?.conditions ?? [];
    const namesAccepted = conditions.find((c) => c.type === "NamesAccepted");
    if (namesAccepted?.status === "False") {
      throw new Error(`CustomResourceDefinition ${name}: names not accepted: ${namesAccepted.message ?? ""}`);
    }
    const established = conditions.find((c) => c.type === "Established");
    if (established?.status === "True") return;
    last = established ? `${established.reason ?? ""} ${established.message ?? ""}`.trim() : last;
    if (Date.now() > deadline) {
      throw new Error(`CustomResourceDefinition ${name} is not Established: ${last}`);
    }
    await sleep(delayMs, undefined, signal ? { signal } : undefined);
    delayMs = Math.min(delayMs * 2, 1000);
  }
}
