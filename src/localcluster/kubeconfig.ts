import { writeFile } from "node:fs/promises";
import { stringify } from "yaml";
import type { KeyPairPem } from "../pki/index.js";

const b64 = (text: string) => Buffer.from(text).toString("base64");

/**
 * A self-contained kubeconfig (certificates embedded). The user entry is named after the cluster
 * so that kubeconfigs of several clusters can be merged, and clients that cache credentials by
 * user name never mix two clusters up.
 */
export function renderKubeconfig(options: {
  cluster: string;
  server: string;
  caPem: string;
  client: KeyPairPem;
  namespace?: string;
}): string {
  const context = `tenantry-${options.cluster}`;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: context,
        cluster: { server: options.server, "certificate-authority-data": b64(options.caPem) },
      },
    ],
    users: [
      {
        name: `${context}-admin`,
        user: {
          "client-certificate-data": b64(options.client.certPem),
          "client-key-data": b64(options.client.keyPem),
        },
      },
    ],
    contexts: [
      {
        name: context,
        context: {
          cluster: context,
          user: `${context}-admin`,
          ...(options.namespace ? { namespace: options.namespace } : {}),
        },
      },
    ],
    "current-context": context,
  });
}

export async function writeKubeconfig(
  path: string,
  options: Parameters<typeof renderKubeconfig>[0],
): Promise<void> {
  await writeFile(path, renderKubeconfig(options), { mode: 0o600 });
}
