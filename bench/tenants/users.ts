import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { renderKubeconfig } from "../../src/localcluster/index.js";
import {
  type CertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from "../../src/pki/index.js";

export interface BenchUser {
  name: string;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
}

/** The CA of one local cluster, which the API server trusts for client certificates. */
export async function clusterCa(harnessDir: string, cluster: string): Promise<CertificateAuthority> {
  const pki = join(harnessDir, cluster, "pki");
  return loadCertificateAuthority({
    certPem: await readFile(join(pki, "ca.crt"), "utf8"),
    keyPem: await readFile(join(pki, "ca.key"), "utf8"),
  });
}

/**
 * A real user of the cluster: a client certificate signed by its CA (CN = user, O = groups), so
 * the API server authenticates and authorises them like any person, with no impersonation.
 */
export async function clusterUser(options: {
  ca: CertificateAuthority;
  cluster: string;
  server: string;
  name: string;
  groups?: string[];
  dir: string;
}): Promise<BenchUser> {
  const client = await issueCertificate(options.ca, {
    commonName: options.name,
    organizations: options.groups ?? [],
    usage: "client",
    validDays: 1,
  });
  const text = renderKubeconfig({
    cluster: options.cluster,
    server: options.server,
    caPem: options.ca.certPem,
    client,
  }).replaceAll(`tenantry-${options.cluster}-admin`, `tenantry-${options.cluster}-${options.name}`);
  const kubeconfigPath = join(options.dir, `${options.name}.kubeconfig`);
  await writeFile(kubeconfigPath, text, { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(text);
  return { name: options.name, kubeConfig, kubeconfigPath };
}
