import { existsSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { defaultClustersDir, UserError } from "../common/index.js";

/**
 * The kubeconfig a command talks to: --kubeconfig, else $KUBECONFIG, else the embedded default's
 * home cluster when it exists (so `npm start` then `npx tenantry tenant list` just works).
 */
export function resolveKubeconfig(explicit?: string): string {
  const candidates = [
    explicit,
    process.env.KUBECONFIG?.split(":")[0],
    join(defaultClustersDir(), "home", "kubeconfig"),
  ];
  for (const path of candidates) {
    if (path && existsSync(path)) return path;
    if (path && path === explicit) throw new UserError(`--kubeconfig ${path}: no such file`);
  }
  throw new UserError(
    "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or start the embedded default with `npm start`",
  );
}

export function loadKubeConfig(explicit?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(resolveKubeconfig(explicit));
  return kc;
}
