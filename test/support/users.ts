import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { renderKubeconfig } from "../../src/localcluster/index.js";
import { issueCertificate, loadCertificateAuthority } from "../../src/pki/index.js";
import { testEnvironment } from "./clusters.js";

export interface TestUser {
  name: string;
  groups: string[];
  kubeConfig: KubeConfig;
  /** A kubeconfig file for running the real kubectl as this user. */
  kubeconfigPath: string;
}

/**
 * A real user of a shared test cluster: a client certificate signed by that cluster's CA, so the
 * API server authenticates them exactly as it would any user (no impersonation).
 */
export async function testUser(name: string, groups: string[] = [], cluster = "home"): Promise<TestUser> {
  const env = testEnvironment();
  const entry = env.clusters.find((c) => c.name === cluster);
  if (!entry) throw new Error(`no test cluster named "${cluster}"`);
  const pkiDir = join(env.dir, cluster, "pki");
  const ca = await loadCertificateAuthority({
    certPem: readFileSync(join(pkiDir, "ca.crt"), "utf8"),
    keyPem: readFileSync(join(pkiDir, "ca.key"), "utf8"),
  });
  const client = await issueCertificate(ca, {
    commonName: name,
    organizations: groups,
    usage: "client",
    validDays: 1,
  });
  const text = renderKubeconfig({ cluster, server: entry.server, caPem: ca.certPem, client }).replaceAll(
    `tenantry-${cluster}-admin`,
    `tenantry-${cluster}-${name.replace(/[^\w.-]/g, "_")}`,
  );
  const kubeconfigPath = join(mkdtempSync(join(tmpdir(), "tenantry-user-")), "kubeconfig");
  writeFileSync(kubeconfigPath, text, { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(text);
  return { name, groups, kubeConfig, kubeconfigPath };
}
