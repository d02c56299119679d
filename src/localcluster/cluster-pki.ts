import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type CertificateAuthority,
  createCertificateAuthority,
  createSigningKeyPair,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from "../pki/index.js";

/** Identities of a local cluster's components: each gets its own client certificate. */
export const clientIdentities = {
  admin: { commonName: "tenantry-admin", organizations: ["system:masters"] },
  controllerManager: { commonName: "system:kube-controller-manager", organizations: [] },
  scheduler: { commonName: "system:kube-scheduler", organizations: [] },
  // KWOK plays every kubelet (node status, leases, pod status), which no narrower built-in role covers.
  kwok: { commonName: "kwok-controller", organizations: ["system:masters"] },
  // The process node's kubelet also provisions volumes and requests tokens for any pod on it.
  processNode: { commonName: "tenantry-process-node", organizations: ["system:masters"] },
  // Bound by name: kube-proxy to the built-in system:node-proxier, the others to the read-only
  // roles the harness creates for them (cluster-network.ts).
  kubeProxy: { commonName: "system:kube-proxy", organizations: [] },
  coredns: { commonName: "system:coredns", organizations: [] },
  kubeRouter: { commonName: "system:kube-router", organizations: [] },
} as const;

export type ClientIdentity = keyof typeof clientIdentities;

export interface ClusterPki {
  dir: string;
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  clients: Record<ClientIdentity, KeyPairPem>;
  caPem: string;
}

async function writePair(dir: string, name: string, pair: KeyPairPem) {
  await writeFile(join(dir, `${name}.crt`), pair.certPem);
  await writeFile(join(dir, `${name}.key`), pair.keyPem, { mode: 0o600 });
}

async function readPair(dir: string, name: string): Promise<KeyPairPem> {
  return {
    certPem: await readFile(join(dir, `${name}.crt`), "utf8"),
    keyPem: await readFile(join(dir, `${name}.key`), "utf8"),
  };
}

async function issueClients(dir: string, ca: CertificateAuthority, onlyMissing: boolean): Promise<void> {
  for (const [name, identity] of Object.entries(clientIdentities)) {
    if (onlyMissing && existsSync(join(dir, `${name}.crt`))) continue;
    await writePair(
      dir,
      name,
      await issueCertificate(ca, {
        ...identity,
        organizations: [...identity.organizations],
        usage: "client",
        validDays: 3650,
      }),
    );
  }
}

/** Creates the cluster's CA and certificates once; later starts reuse them so kubeconfigs stay valid. */
export async function ensureClusterPki(dir: string, clusterName: string): Promise<ClusterPki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const complete = join(dir, ".complete");
  if (!existsSync(complete)) {
    const ca = await createCertificateAuthority(`tenantry-${clusterName}-ca`);
    await writePair(dir, "ca", ca);
    await writePair(
      dir,
      "apiserver",
      await issueCertificate(ca, {
        commonName: "kube-apiserver",
        dnsNames: [
          "localhost",
          "kubernetes",
          "kubernetes.default",
          "kubernetes.default.svc",
          "kubernetes.default.svc.cluster.local",
        ],
        ipAddresses: ["127.0.0.1", "::1", "10.96.0.1"],
        usage: "server",
        validDays: 3650,
      }),
    );
    await issueClients(dir, ca, false);
    const serviceAccount = await createSigningKeyPair();
    await writeFile(join(dir, "sa.key"), serviceAccount.privateKeyPem, { mode: 0o600 });
    await writeFile(join(dir, "sa.pub"), serviceAccount.publicKeyPem);
    await writeFile(complete, "");
  }
  const ca = await loadCertificateAuthority(await readPair(dir, "ca"));
  // A cluster created before an identity was added gets its certificate now; the others are kept.
  await issueClients(dir, ca, true);
  const clients = {} as Record<ClientIdentity, KeyPairPem>;
  for (const name of Object.keys(clientIdentities) as ClientIdentity[])
    clients[name] = await readPair(dir, name);
  return {
    dir,
    caCert: join(dir, "ca.crt"),
    caKey: join(dir, "ca.key"),
    servingCert: join(dir, "apiserver.crt"),
    servingKey: join(dir, "apiserver.key"),
    serviceAccountKey: join(dir, "sa.key"),
    serviceAccountPub: join(dir, "sa.pub"),
    clients,
    caPem: ca.certPem,
  };
}
